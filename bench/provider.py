"""``python -m bench provider [--files N] [--runs K] [--page-sizes 1000,5000] [--million]``

The provider at scale, over loopback, on a generated site (kept in ``bench/out/``):

1. the initial index of the site and a refresh when nothing changed;
2. a full ListIdentifiers harvest with a plain client (requests + lxml, following the
   resumptionToken) against the provider and, side by side, against ``oaipmh``'s
   ``BatchingServer`` over an in-memory sorted list of the same headers
   (:mod:`bench.baseline_oaipmh`), both under gunicorn with one sync worker, alternating;
3. a full ListRecords ``oai_didl`` harvest, as MB/s of inline resource bytes delivered, over the
   site and over a folder of larger files;
4. the peak RSS (VmHWM) of the gunicorn worker; with ``--million``, also at 1,000,000 files.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests
from lxml import etree

from bench import firstpage
from bench.firstpage import FirstPageTimes
from bench.harness import Report, alternate, median
from bench.workers import vm_hwm_kib, worker_peak_rss_mb
from server_module.index.fileindex import FileIndex, RefreshStats
from tests.servers import HOST, RunningServer, free_port, wait_until_answers
from tests.sites import make_site

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out"
# Identifiers are this plus the path; fixed, so that a server on another port does not make the
# index re-identify every item.
BASE_URL = "http://localhost/site"
OAI = "{http://www.openarchives.org/OAI/2.0/}"
DIDL_RESOURCE = "{urn:mpeg:mpeg21:2002:02-DIDL-NS}Resource"
COLUMNS = ["metric", "ours", "baseline", "ratio", "target", "met?"]
TARGET_IDS, TARGET_RATIO, TARGET_FIRST_MS, TARGET_MB_S, TARGET_RSS_MB = 250_000, 3.0, 10, 30, 150
TARGET_IDS_TEXT = f">= {TARGET_IDS:,}, >= {TARGET_RATIO:g}x"
LARGE_FILES, LARGE_BYTES = 200, 512 * 1024
RECORD_RUNS = 3  # at most: an oai_didl harvest of 100,000 small files takes about a minute


@dataclass
class Harvest:
    """What one complete list request sequence delivered."""

    items: int
    payload: int  # inline resource bytes, after base64 decoding
    pages: int
    first_page_s: float
    first_page: bytes
    waiting_s: float  # request sent to response headers, summed: the server's share
    client_cpu_s: float  # this process's CPU time: what the client itself costs


# -- the site and its index --------------------------------------------------------------


def site_of(files: int) -> Path:
    """A generated site of about ``files`` files, made once and reused."""
    root, done = OUT / f"site-{files}", OUT / f"site-{files}.done"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        manifest = make_site(root, pages=max(1, round(files / 1.1)), seed=1)
        done.write_text(f"{len(manifest.public)}\n")
        time.sleep(2.1)  # past the index's racy-ctime window, or the next refresh rehashes
    return root


def large_site() -> Path:
    """``LARGE_FILES`` files of ``LARGE_BYTES`` random bytes each."""
    root, done = OUT / f"large-{LARGE_FILES}", OUT / f"large-{LARGE_FILES}.done"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        rng = random.Random(1)
        for i in range(LARGE_FILES):
            (root / f"blob-{i:03}.bin").write_bytes(rng.randbytes(LARGE_BYTES))
        done.write_text(f"{LARGE_FILES}\n")
        time.sleep(2.1)
    return root


def fresh_index(docroot: Path, path: Path, refreshes: int) -> tuple[float, list[float], int]:
    """Seconds of the first refresh of a new index, of each unchanged refresh; item count."""
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with FileIndex(path, docroot, BASE_URL) as index:
        initial = _refresh(index)
        again = [_refresh(index) for _ in range(refreshes)]
        with index.snapshot() as snap:
            total = snap.count()
    if initial.added != total:
        raise RuntimeError(f"the first refresh added {initial.added} of {total} items")
    return initial.seconds, [s.seconds for s in again], total


def current_index(docroot: Path, path: Path) -> int:
    """The item count of the index at ``path``, made or brought up to date first."""
    with FileIndex(path, docroot, BASE_URL) as index:
        _refresh(index)
        with index.snapshot() as snap:
            return snap.count()


def _refresh(index: FileIndex) -> RefreshStats:
    stats = index.refresh()
    assert stats is not None  # blocking refreshes always run
    return stats


# -- servers -----------------------------------------------------------------------------


@contextmanager
def serving(argv: list[str], log_name: str, timeout: float = 600.0) -> Iterator[RunningServer]:
    """Run a server command (``{port}`` filled in), its output to ``bench/out/<log_name>.log``."""
    port = free_port()
    with open(OUT / f"{log_name}.log", "wb") as log:
        proc = subprocess.Popen(
            [a.format(port=port) for a in argv], stdout=log, stderr=subprocess.STDOUT, cwd=REPO
        )
    with RunningServer(proc, HOST, port) as server:
        wait_until_answers(f"{server.url}/oai?verb=Identify", proc, timeout)
        yield server


def ours(docroot: Path, index: Path, page_size: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "server_module.cli",
        "serve",
        str(docroot),
        "--port",
        "{port}",
        "--base-url",
        BASE_URL,
        "--index",
        str(index),
        "--page-size",
        str(page_size),
        "--workers",
        "1",
        "--threads",
        "1",
        "--refresh-interval",
        "0",
        "--no-plugins",  # the protocol's costs, as measured before plugins (bench plugins)
    ]


def baseline(docroot: Path, index: Path, page_size: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bench.baseline_oaipmh",
        str(index),
        str(docroot),
        "--base-url",
        BASE_URL,
        "--port",
        "{port}",
        "--page-size",
        str(page_size),
    ]


# -- the harvesting client ---------------------------------------------------------------


def harvest(url: str, verb: str, prefix: str, max_pages: int, gzip: bool = False) -> Harvest:
    """A whole list request sequence: every page fetched, parsed and counted."""
    params = {"verb": verb, "metadataPrefix": prefix}
    items = payload = 0
    first_s, first, waiting = 0.0, b"", 0.0
    cpu = time.process_time()
    with requests.Session() as session:
        session.trust_env = False  # loopback: no proxy or netrc look-ups on every request
        if not gzip:
            session.headers["Accept-Encoding"] = "identity"
        for page in range(1, max_pages + 1):
            started = time.perf_counter()
            response = session.get(url, params=params, timeout=300)
            response.raise_for_status()
            waiting += response.elapsed.total_seconds()
            if page == 1:
                first_s, first = time.perf_counter() - started, response.content
            root = etree.fromstring(response.content)
            listed = _list_element(root, verb)
            if verb == "ListIdentifiers":
                items += sum(1 for _ in listed.iterfind(f"{OAI}header"))
            else:
                items += sum(1 for _ in listed.iterfind(f"{OAI}record"))
                payload += _inline_bytes(listed)
            token = listed.findtext(f"{OAI}resumptionToken")
            if not token:
                cpu = time.process_time() - cpu
                return Harvest(items, payload, page, first_s, first, waiting, cpu)
            params = {"verb": verb, "resumptionToken": token}
    raise RuntimeError(f"{url}: no end of the list within {max_pages} pages")


def _list_element(root: etree._Element, verb: str) -> etree._Element:
    listed = root.find(f"{OAI}{verb}")
    if listed is None:
        errors = [(e.get("code"), e.text) for e in root.iterfind(f"{OAI}error")]
        raise RuntimeError(f"{verb}: no list in the response; errors: {errors}")
    return listed


def _inline_bytes(listed: etree._Element) -> int:
    return sum(
        len(base64.b64decode(r.text or ""))
        for r in listed.iter(DIDL_RESOURCE)
        if r.get("encoding") == "base64"
    )


def schema_problems(documents: dict[str, bytes]) -> list[str]:
    """Each first page checked against the reference schemas (as the tests do)."""
    try:
        from tests.schemas import combined_schema

        schema = combined_schema()
    except BaseException as exc:  # pytest.skip when the schemas are absent
        return [f"schema validation not run: {exc}"]
    problems = []
    for name, doc in documents.items():
        if not schema.validate(etree.fromstring(doc)):
            problems.append(f"{name}: {schema.error_log.last_error}")
    return problems


# -- the measurements --------------------------------------------------------------------


@dataclass
class Listing:
    """One page size: harvests and seconds per contender, and peak RSS (MiB) per process."""

    page_size: int
    got: dict[str, list[Harvest]]
    seconds: dict[str, list[float]]
    rss: dict[str, float]
    first: FirstPageTimes

    def rate(self, name: str, total: int) -> float:
        """Items per second over whole harvests."""
        return total / median(self.seconds[name])

    def server_rate(self, name: str, total: int) -> float:
        """Items per second of the server's own share (see ``Harvest.waiting_s``)."""
        return total / median([h.waiting_s for h in self.got[name]])

    def client_rate(self, name: str, total: int) -> float:
        """Items per second of client CPU: the most this client could harvest."""
        return total / median([h.client_cpu_s for h in self.got[name]])

    def first_ms(self, name: str) -> float:
        return 1000 * median([h.first_page_s for h in self.got[name]])

    def mb_per_s(self, name: str) -> float:
        pairs = zip(self.got[name], self.seconds[name], strict=True)
        return median([h.payload / s / 1e6 for h, s in pairs])


def compare_listing(
    docroot: Path, index: Path, total: int, page_size: int, runs: int, records: bool
) -> Listing:
    """Both servers up; ListIdentifiers harvests alternated; then ``oai_didl`` on ours."""
    got: dict[str, list[Harvest]] = {"ours": [], "baseline": [], "gzip": [], "didl": []}
    with ExitStack() as stack:
        mine = stack.enter_context(serving(ours(docroot, index, page_size), f"ours-{page_size}"))
        peer = stack.enter_context(serving(baseline(docroot, index, page_size), "baseline"))
        pages = total // page_size + 10

        def run(name: str, server: RunningServer, gzip: bool = False) -> Callable[[], object]:
            url = f"{server.url}/oai"
            return lambda: got[name].append(harvest(url, "ListIdentifiers", "oai_dc", pages, gzip))

        contenders = {"ours": run("ours", mine), "baseline": run("baseline", peer)}
        if records:  # the headline round also tries what a client gets with gzip negotiated
            contenders["gzip"] = run("gzip", mine, gzip=True)
        seconds = alternate(contenders, repeats=runs)
        first = firstpage.measure({"ours": mine, "baseline": peer}, samples=5 * runs)
        if records:
            url = f"{mine.url}/oai"
            seconds["didl"] = [_timed_into(got["didl"], url, total) for _ in _record_runs(runs)]
        rss = {
            "ours": worker_peak_rss_mb(mine.process.pid),
            "baseline": worker_peak_rss_mb(peer.process.pid),
            "master": vm_hwm_kib(mine.process.pid) / 1024,
        }
    _check_counts(total, [h for harvests in got.values() for h in harvests])
    return Listing(page_size, got, seconds, rss, first)


def _record_runs(runs: int) -> range:
    return range(min(runs, RECORD_RUNS))


def _timed_into(out: list[Harvest], url: str, total: int) -> float:
    started = time.perf_counter()
    out.append(harvest(url, "ListRecords", "oai_didl", total + 10))
    return time.perf_counter() - started


def _check_counts(total: int, harvests: list[Harvest]) -> None:
    wrong = sorted({h.items for h in harvests if h.items != total})
    if wrong:
        raise RuntimeError(f"harvests listed {wrong} items where the index holds {total}")


def large_didl(runs: int) -> float:
    """Median MB/s of an ``oai_didl`` harvest of the large files."""
    docroot, index = large_site(), OUT / f"large-{LARGE_FILES}.sqlite"
    _initial, _again, total = fresh_index(docroot, index, refreshes=0)
    got: list[Harvest] = []
    with serving(ours(docroot, index, 1000), "ours-large") as server:
        times = [_timed_into(got, f"{server.url}/oai", total) for _ in _record_runs(runs)]
    _check_counts(total, got)
    return median([h.payload / s / 1e6 for h, s in zip(got, times, strict=True)])


def million_rss(runs: int) -> tuple[int, float, float, float, float]:
    """At 1,000,000 files: items, index seconds, ids/s, worker and master peak RSS (MiB)."""
    docroot, index = site_of(1_000_000), OUT / "site-1000000.sqlite"
    initial, _again, total = fresh_index(docroot, index, refreshes=0)
    with serving(ours(docroot, index, 1000), "ours-million") as server:
        url, pages = f"{server.url}/oai", total // 1000 + 10
        times = alternate({"ours": lambda: harvest(url, "ListIdentifiers", "oai_dc", pages)}, runs)
        worker = worker_peak_rss_mb(server.process.pid)
        master = vm_hwm_kib(server.process.pid) / 1024
    return total, initial, total / median(times["ours"]), worker, master


# -- the report --------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench provider", description=__doc__)
    parser.add_argument("--files", type=int, default=100_000, help="site size (files)")
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per contender")
    parser.add_argument(
        "--page-sizes", default="1000,5000", help="ListIdentifiers page sizes; the first heads"
    )
    parser.add_argument("--million", action="store_true", help="also serve 1,000,000 files")
    args = parser.parse_args(argv)
    args.page_sizes = [int(size) for size in args.page_sizes.split(",")]
    return args


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    load = os.getloadavg()[0]
    OUT.mkdir(parents=True, exist_ok=True)
    docroot, index = site_of(args.files), OUT / f"site-{args.files}.sqlite"
    initial, again, total = fresh_index(docroot, index, args.runs)
    listings = [
        compare_listing(docroot, index, total, size, args.runs, records=i == 0)
        for i, size in enumerate(args.page_sizes)
    ]
    head = listings[0]
    report = Report("provider", COLUMNS)
    report.rows += [
        _row(f"initial index of {total:,} files (s)", initial),
        _row("refresh, nothing changed (s)", median(again)),
    ]
    for listing in listings:
        report.rows += _listing_rows(listing, total)
    report.rows += _didl_rows(head, total, large_didl(args.runs))
    report.rows += _rss_rows(head, total)
    if args.million:
        report.rows += _million_rows(head, total, args.runs)
    report.figures |= _figures(head, total, initial, median(again))
    report.notes += _notes(head, args, total)
    report.notes.append(
        f"Load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
        f"on {os.cpu_count()} CPUs shared with other work."
    )
    return report


def _row(
    metric: str,
    ours: float,
    base: float | None = None,
    target: str = "",
    met: bool | str | None = None,
) -> list[object]:
    """One table row; the ratio is always ours / baseline."""
    ratio = "" if base is None else ours / base
    verdict = met if isinstance(met, str) else _met(met)
    return [metric, ours, "" if base is None else base, ratio, target, verdict]


def _met(ok: bool | None) -> str:
    return "" if ok is None else "yes" if ok else "no"


def _listing_rows(listing: Listing, total: int) -> list[list[object]]:
    size = f"page {listing.page_size:,}"
    ours, base = listing.rate("ours", total), listing.rate("baseline", total)
    ours_ms, base_ms = listing.first_ms("ours"), listing.first_ms("baseline")
    met = f"{_met(ours >= TARGET_IDS)}, {_met(ours / base >= TARGET_RATIO)}"
    rows = [
        _row(f"ListIdentifiers, {size} (ids/s)", ours, base, TARGET_IDS_TEXT, met),
        _row(f"ListIdentifiers, {size}, server only (ids/s)",
             listing.server_rate("ours", total), listing.server_rate("baseline", total)),
        _row(f"ListIdentifiers, {size}, client CPU bound (ids/s)",
             listing.client_rate("ours", total), listing.client_rate("baseline", total)),
        _row(f"first page, {size} (ms)", ours_ms, base_ms, f"< {TARGET_FIRST_MS}",
             ours_ms < TARGET_FIRST_MS),
    ]  # fmt: skip
    rows += firstpage.rows(listing.first, size)
    if "gzip" in listing.seconds:
        gzip = listing.rate("gzip", total)
        rows.append(_row(f"ListIdentifiers, {size}, gzip negotiated (ids/s)", gzip, base))
    return rows


def _didl_rows(head: Listing, total: int, large_mb_s: float) -> list[list[object]]:
    small = head.mb_per_s("didl")
    avg_kib = head.got["didl"][0].payload / total / 1024
    return [
        _row(f"ListRecords oai_didl, the {total:,} site files, {avg_kib:.1f} KiB avg (MB/s)",
             small, None, f">= {TARGET_MB_S}", small >= TARGET_MB_S),
        _row(f"ListRecords oai_didl, {LARGE_FILES} files of {LARGE_BYTES // 1024} KiB (MB/s)",
             large_mb_s, None, f">= {TARGET_MB_S}", large_mb_s >= TARGET_MB_S),
    ]  # fmt: skip


def _rss_rows(head: Listing, total: int) -> list[list[object]]:
    worker = head.rss["ours"]
    return [
        _row(f"worker peak RSS at {total:,} files (MiB)", worker, head.rss["baseline"],
             f"< {TARGET_RSS_MB}", worker < TARGET_RSS_MB),
        _row("gunicorn master peak RSS, start-up refresh (MiB)", head.rss["master"]),
    ]  # fmt: skip


def _million_rows(head: Listing, small: int, runs: int) -> list[list[object]]:
    total, initial, rate, worker, master = million_rss(runs)
    growth = f"worker peak RSS growth, {small:,} to {total:,} files (MiB)"
    return [
        _row(f"initial index of {total:,} files (s)", initial),
        _row(f"ListIdentifiers, {total:,} files, page 1,000 (ids/s)", rate),
        _row(f"worker peak RSS at {total:,} files (MiB)", worker, None, f"< {TARGET_RSS_MB}",
             worker < TARGET_RSS_MB),
        _row(growth, worker - head.rss["ours"]),
        _row(f"gunicorn master peak RSS at {total:,} files (MiB)", master),
    ]  # fmt: skip


def _figures(head: Listing, total: int, initial: float, refresh: float) -> dict[str, float]:
    ours, base = head.rate("ours", total), head.rate("baseline", total)
    return {
        "files": total,
        "page_size": head.page_size,
        "ids_per_s": round(ours),
        "baseline_ids_per_s": round(base),
        "ratio": round(ours / base, 2),
        "first_page_ms": round(head.first_ms("ours"), 2),
        "first_page_sickle_ms": round(head.first.ms("sickle", "ours"), 2),
        "didl_mb_per_s": round(head.mb_per_s("didl"), 2),
        "rss_mb": round(head.rss["ours"], 1),
        "index_s": round(initial, 2),
        "refresh_s": round(refresh, 3),
    }


def _notes(head: Listing, args: argparse.Namespace, total: int) -> list[str]:
    notes = [
        f"{total:,} items; medians of {args.runs} alternating runs per contender "
        f"({len(_record_runs(args.runs))} for oai_didl); page size {head.page_size:,} for both "
        "servers in the headline rows; ratio = ours / baseline (for times, lower is better).",
        "Both servers under gunicorn with 1 sync worker on loopback. The client "
        "(requests.Session with Accept-Encoding: identity unless noted, "
        "lxml.etree.fromstring + iterfind) counts every item and follows the resumptionToken.",
        "Server only: items / the summed time from each request sent to its response headers "
        "(both servers build the whole page before the headers go out). Client CPU bound: "
        "items / the client's own CPU seconds, the rate no server could beat with this client "
        "on this machine. First page: the "
        "list's first request, sent to body received; it also counts the list. MB/s: inline "
        "resource bytes after base64 decoding (10^6 bytes). RSS: VmHWM of the one gunicorn "
        "worker after all its harvests, and of the master, which refreshes the index before "
        "forking (the worker runs no refresh: --refresh-interval 0).",
    ]
    documents = {
        "ours ListIdentifiers": head.got["ours"][0].first_page,
        "baseline ListIdentifiers": head.got["baseline"][0].first_page,
        "ours ListRecords oai_didl": head.got["didl"][0].first_page,
    }
    problems = schema_problems(documents)
    notes.append("; ".join(problems) if problems else "First pages valid against the schemas.")
    return notes
