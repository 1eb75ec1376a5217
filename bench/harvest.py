"""``python -m bench harvest [--files N] [--big N] [--skip-big] [--runs K]``

Archiving a generated site that the provider serves under gunicorn, over loopback; everything
is written below ``bench/out/harvest/`` (remade on every run):

1. **initial harvest** of a ``--files`` site by our harvester (list over OAI-PMH, fetch every
   URL into WARC files with a DIDL record each) and, alternating with it against the same
   server, ``wget -r`` from ``index.html`` writing a WARC; pages/s, and each one's coverage of
   the site's public files;
2. **incremental**, after 1% of the files were modified, 0.5% deleted and 0.5% added and the
   provider's index refreshed, three ways of catching up, alternating: (a) our harvester rerun
   on its folder; (b) a naive recrawl of every URL the first harvest knew, with conditional
   GETs carrying its validators (:func:`recrawl`); (c) ``wget -r -N --no-if-modified-since``
   over the mirror of a plain wget crawl. What (a) archived is checked against the changes;
3. **scale**: the same number of changes on a ``--big`` site; (a) there and on the first site,
   alternating, each from a fresh copy of its initial harvest;
4. **memory**: the harvester's peak RSS in the initial harvest of the big site.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

import aiohttp
from warcio.archiveiterator import ArchiveIterator
from yarl import URL

from bench.harness import Report, median, run_child
from harvester.settings import defaults as harvest_defaults
from harvester.storage.sqlite.state import SQLiteState
from server_module.index.fileindex import FileIndex
from tests.servers import HOST, RunningServer, free_port, wait_until_answers
from tests.sites import Manifest, make_site

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "harvest"
COLUMNS = ["metric", "ours", "peer", "ratio", "target", "met?"]
TARGET_RATE, TARGET_INCREMENTAL, TARGET_SCALE, TARGET_RSS_MB = 1.5, 10.0, 1.2, 300
PROTECTED = {"index.html", "style/site.css"}  # the crawl's entry points are never deleted
TIMEOUT = 3600.0  # seconds any one harvest, crawl or server start may take
SETTLE = 2.1  # past the index's racy-ctime window, so a refresh sees settled files


# -- sites and their changes ------------------------------------------------------------


@dataclass(frozen=True)
class Changes:
    modified: frozenset[str]
    deleted: frozenset[str]
    added: frozenset[str]

    @property
    def count(self) -> int:
        return len(self.modified) + len(self.deleted) + len(self.added)


def fresh_site(name: str, files: int) -> Manifest:
    """A newly generated site of about ``files`` files."""
    root = OUT / name
    manifest = make_site(root, pages=max(1, round(files / 1.1)), seed=1)
    time.sleep(SETTLE)
    return manifest


def change_site(manifest: Manifest, modified: int, deleted: int, added: int) -> Changes:
    """Append to ``modified`` files, remove ``deleted`` and write ``added`` unlinked pages."""
    rng = random.Random(2)
    chosen = rng.sample(sorted(manifest.public - PROTECTED), modified + deleted)
    changes = Changes(
        frozenset(chosen[:modified]),
        frozenset(chosen[modified:]),
        frozenset(f"added/new-{i}.html" for i in range(added)),
    )
    for rel in changes.modified:
        with open(manifest.root / rel, "ab") as fh:
            fh.write(b"\n<!-- changed -->\n")
    for rel in changes.deleted:
        (manifest.root / rel).unlink()
    (manifest.root / "added").mkdir(exist_ok=True)
    for rel in changes.added:
        (manifest.root / rel).write_text(f"<!DOCTYPE html><title>{rel}</title><p>new</p>\n")
    time.sleep(SETTLE)
    return changes


# -- the provider -----------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    docroot: Path
    index: Path
    url: str  # also the base URL of every identifier


@contextmanager
def providing(docroot: Path, workers: int, threads: int) -> Iterator[Provider]:
    """``oai-provider serve`` on a free port; its log goes to ``<docroot>.log``. Without
    plugins: the protocol's costs, as measured before them (``bench plugins`` has theirs)."""
    port = free_port()
    url, index = f"http://{HOST}:{port}", docroot.with_suffix(".sqlite")
    argv = [sys.executable, "-m", "server_module.cli", "serve", str(docroot), "--port", str(port),
            "--base-url", url, "--index", str(index), "--workers", str(workers),
            "--threads", str(threads), "--refresh-interval", "0", "--no-plugins"]  # fmt: skip
    with open(docroot.with_suffix(".log"), "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    with RunningServer(proc, HOST, port):
        wait_until_answers(f"{url}/oai?verb=Identify", proc, TIMEOUT)
        # A harvest lists from its first responseDate minus 1 s next time; one started in the
        # second after the start-up refresh would relist every item on its incremental run.
        time.sleep(SETTLE)
        yield Provider(docroot, index, url)


def refresh_index(provider: Provider, changes: Changes) -> None:
    """What ``oai-provider index`` does; the counts must match the changes made."""
    with FileIndex(provider.index, provider.docroot, provider.url) as index:
        stats = index.refresh()
    seen = (stats.changed, stats.deleted, stats.added) if stats else None
    made = (len(changes.modified), len(changes.deleted), len(changes.added))
    if seen != made:
        raise RuntimeError(f"the index refresh saw {seen} (changed, deleted, added), not {made}")


# -- measured child processes -----------------------------------------------------------


@dataclass(frozen=True)
class Child:
    seconds: float  # wall clock, start to exit
    rss_mb: float  # peak resident set (ru_maxrss of the command alone: harness.run_child)
    stdout: str


def measured(argv: list[str], name: str, ok: Iterable[int] = (0,)) -> Child:
    """Run a command to its end (killed after TIMEOUT); stdout and stderr to ``logs/name.*``."""
    out, err = OUT / "logs" / f"{name}.out", OUT / "logs" / f"{name}.err"
    run = run_child(argv, out, err, timeout=TIMEOUT, ok=ok, cwd=REPO)
    return Child(run.seconds, run.usage.ru_maxrss * 1024 / 1e6, run.stdout)


@dataclass(frozen=True)
class Options:
    runs: int
    concurrency: int
    per_host: int


def ours(
    provider: Provider, out: Path, opts: Options, strategy: str = "get", processes: int = 0
) -> Child:
    """One ``harvester harvest`` run: initial on a new folder, incremental on a used one;
    ``processes`` fetching processes (0: the default)."""
    argv = [sys.executable, "-m", "harvester.cli", "harvest", provider.url, "--out", str(out),
            "--quiet", "--json", "--concurrency", str(opts.concurrency),
            "--per-host", str(opts.per_host), "--oai-strategy", strategy,
            "--fetch-processes", str(processes)]  # fmt: skip
    return measured(argv, f"{out.name}-{'incremental' if out.exists() else 'initial'}")


WGET_CRAWL = ["wget", "-r", "-l", "inf", "-np", "-e", "robots=off", "-q"]
WGET_OK = (0, 8)  # 8: some links answered 404 (pages deleted since)


def wget_warc(provider: Provider, folder: Path) -> Child:
    """The initial-harvest peer: a crawl from index.html into a WARC, keeping no files."""
    warc = [f"--warc-file={folder / 'wget'}", f"--warc-tempdir={folder}", "-P", str(folder)]
    folder.mkdir(parents=True)
    argv = [*WGET_CRAWL, "-nd", "--delete-after", *warc, f"{provider.url}/index.html"]
    return measured(argv, folder.name, WGET_OK)


def wget_mirror(provider: Provider, folder: Path, update: bool = False) -> Child:
    """A plain mirror; with ``update``, ``-N`` over an existing one (HEAD per known file)."""
    argv = [*WGET_CRAWL, "-P", str(folder)]
    if update:  # wget 1.21 without the flag gets a 304 for the start page and stops there
        argv += ["-N", "--no-if-modified-since"]
    return measured([*argv, f"{provider.url}/index.html"], folder.name, WGET_OK)


# -- the naive recrawl (b) --------------------------------------------------------------


@dataclass(frozen=True)
class Known:
    url: str
    etag: str | None
    last_modified: str | None


def known_urls(out: Path, site: str) -> list[Known]:
    """Every URL our first harvest archived, with the validators it got."""
    with SQLiteState(out / "state.sqlite") as state:
        return [Known(r.url, r.etag, r.last_modified) for r in state.resources(site, ("archived",))]


def recrawl(known: list[Known], opts: Options) -> Counter[int]:
    """GET every known URL with If-None-Match / If-Modified-Since; count the statuses."""
    return asyncio.run(asyncio.wait_for(_recrawl(known, opts), TIMEOUT))


async def _recrawl(known: list[Known], opts: Options) -> Counter[int]:
    statuses: Counter[int] = Counter()
    queue: asyncio.Queue[Known] = asyncio.Queue()
    for item in known:
        queue.put_nowait(item)
    connector = aiohttp.TCPConnector(limit=opts.concurrency, limit_per_host=opts.per_host)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def worker() -> None:
            while not queue.empty():
                statuses[await _conditional_get(session, queue.get_nowait())] += 1

        await asyncio.gather(*(worker() for _ in range(opts.concurrency)))
    return statuses


async def _conditional_get(session: aiohttp.ClientSession, item: Known) -> int:
    headers = {"Accept-Encoding": "identity"}
    if item.etag:
        headers["If-None-Match"] = item.etag
    if item.last_modified:
        headers["If-Modified-Since"] = item.last_modified
    async with session.get(URL(item.url, encoded=True), headers=headers) as response:
        await response.read()
        return response.status


# -- what the WARCs hold ----------------------------------------------------------------


@dataclass(frozen=True)
class Captures:
    responses: frozenset[str]  # relative paths of HTTP 200 responses
    deletions: int  # metadata records that close no capture of their own: deletion notes
    resources: frozenset[str] = frozenset()  # relative paths of resource records (didl)

    @property
    def captures(self) -> frozenset[str]:
        return self.responses | self.resources


def read_warcs(paths: Iterable[Path]) -> Captures:
    responses: set[str] = set()
    resources: set[str] = set()
    content_ids: set[str] = set()
    refers: list[str] = []
    for path in paths:
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                headers = record.rec_headers
                if record.rec_type in ("response", "revisit", "resource"):
                    content_ids.add(headers.get_header("WARC-Record-ID"))
                if record.rec_type == "response" and record.http_headers.get_statuscode() == "200":
                    responses.add(relpath(headers.get_header("WARC-Target-URI")))
                elif record.rec_type == "resource":
                    resources.add(relpath(headers.get_header("WARC-Target-URI")))
                elif record.rec_type == "metadata":
                    refers.append(headers.get_header("WARC-Refers-To") or "")
    deletions = sum(1 for ref in refers if ref not in content_ids)
    return Captures(frozenset(responses), deletions, frozenset(resources))


def relpath(url: str) -> str:
    """A URL's path as a manifest path (percent-decoded bytes, then :func:`os.fsdecode`)."""
    return os.fsdecode(unquote_to_bytes(urlsplit(url).path).lstrip(b"/"))


def ours_warcs(out: Path) -> list[Path]:
    return sorted((out / "warcs").glob("*.warc.gz"))


def coverage(found: frozenset[str], manifest: Manifest) -> float:
    return len(found & manifest.public) / len(manifest.public)


# -- 1. initial harvest -----------------------------------------------------------------


@dataclass
class Initial:
    ours: list[Child]  # --oai-strategy get (the default), into ours-<run>
    didl: list[Child]  # --oai-strategy didl, into didl-<run>
    wget: list[Child]
    ours_found: frozenset[str]
    didl_found: frozenset[str]
    wget_found: frozenset[str]
    single: list[Child] = field(default_factory=list)  # get in one process, into single-<run>

    def rates(self) -> tuple[float, float]:
        """Median pages/s: files archived over wall seconds (ours with ``get``, wget)."""
        return _rate(self.ours), median([len(self.wget_found) / c.seconds for c in self.wget])

    def didl_rate(self) -> float:
        return _rate(self.didl)


def _rate(runs: list[Child]) -> float:
    return median([_summary(c)["fetched"] / c.seconds for c in runs])


def initial(provider: Provider, opts: Options) -> Initial:
    """Ours (both strategies) and wget, alternating, each into a fresh folder."""
    got = Initial([], [], [], frozenset(), frozenset(), frozenset())
    for run in range(1, opts.runs + 1):
        got.ours.append(ours(provider, OUT / f"ours-{run}", opts))
        got.single.append(ours(provider, OUT / f"single-{run}", opts, processes=1))
        got.didl.append(ours(provider, OUT / f"didl-{run}", opts, "didl"))
        got.wget.append(wget_warc(provider, OUT / f"wget-{run}"))
    got.ours_found = read_warcs(ours_warcs(OUT / "ours-1")).responses
    got.didl_found = read_warcs(ours_warcs(OUT / "didl-1")).captures
    got.wget_found = read_warcs((OUT / "wget-1").glob("*.warc.gz")).responses
    return got


def _commit() -> str:
    """The checked-out commit, ``+dirty`` when the working tree differs from it."""
    head = ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]
    dirty = ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"]
    try:
        commit = subprocess.run(head, capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(dirty, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if changed.strip() else "")


def _summary(child: Child) -> dict[str, float]:
    summary: dict[str, float] = json.loads(child.stdout)
    return summary


# -- 2. incremental ---------------------------------------------------------------------


@dataclass
class Incremental:
    ours: list[Child]
    naive_s: list[float]
    naive: Counter[int]
    wget: list[Child]
    wget_updated: int  # files the first (c) run wrote into its mirror
    mirror: Child
    changes: Changes
    archived: Captures  # what the first (a) run's new WARC files hold
    state_deleted: frozenset[str]


def incremental(provider: Provider, manifest: Manifest, opts: Options, files: int) -> Incremental:
    """Mirror, snapshot, change the site, then (a), (b), (c) alternating."""
    mirror = wget_mirror(provider, OUT / "mirror")
    known = known_urls(OUT / "ours-1", provider.url)
    for run in range(1, opts.runs + 1):
        shutil.copytree(OUT / "mirror", OUT / f"mirror-{run}", symlinks=True)
    shutil.copytree(OUT / "ours-1", OUT / "small-base")  # for the scale runs, before changes
    before = set(ours_warcs(OUT / "ours-1"))
    changed_at = int(time.time())  # Last-Modified has whole seconds
    changes = change_site(manifest, files // 100, files // 200, files // 200)
    refresh_index(provider, changes)
    got = Incremental([], [], Counter(), [], 0, mirror, changes, Captures(frozenset(), 0),
                      frozenset())  # fmt: skip
    for run in range(1, opts.runs + 1):
        got.ours.append(ours(provider, OUT / f"ours-{run}", opts))
        started = time.perf_counter()
        got.naive = recrawl(known, opts)
        got.naive_s.append(time.perf_counter() - started)
        got.wget.append(wget_mirror(provider, OUT / f"mirror-{run}", update=True))
    got.wget_updated = _files_since(OUT / "mirror-1", changed_at)
    got.archived = read_warcs(sorted(set(ours_warcs(OUT / "ours-1")) - before))
    with SQLiteState(OUT / "ours-1" / "state.sqlite") as state:
        gone = state.resources(provider.url, ("deleted",))
        got.state_deleted = frozenset(relpath(r.url) for r in gone)
    return got


def _files_since(folder: Path, moment: float) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file() and p.stat().st_mtime >= moment)


def exact(inc: Incremental) -> list[str]:
    """How what (a) archived differs from the changes made; empty when exactly right."""
    problems = []
    expected = inc.changes.modified | inc.changes.added
    if inc.archived.responses != expected:
        problems.append(
            f"WARC responses: {len(inc.archived.responses - expected)} unexpected, "
            f"{len(expected - inc.archived.responses)} missing"
        )
    if inc.archived.deletions != len(inc.changes.deleted):
        problems.append(f"WARC deletion notes: {inc.archived.deletions}")
    if inc.state_deleted != inc.changes.deleted:
        problems.append(f"state marks {len(inc.state_deleted)} deleted")
    for child in inc.ours:
        s = _summary(child)
        if s["listed"] != inc.changes.count:
            problems.append(f"listed {s['listed']:,} headers")
        if (s["fetched"], s["deleted"], s["failed"]) != (
            len(expected),
            len(inc.changes.deleted),
            0,
        ):
            problems.append(
                f"summary fetched={s['fetched']} deleted={s['deleted']} failed={s['failed']}"
            )
    return problems


# -- 3. and 4. the big site -------------------------------------------------------------


@dataclass
class Scale:
    files: int
    initial: Child
    small: list[Child]
    big: list[Child]


def scale(small: Provider, big_files: int, changes: Changes, opts: Options, workers: int,
          threads: int) -> Scale:  # fmt: skip
    """The big site's initial harvest, the same changes, then incremental runs alternating."""
    manifest = fresh_site(f"site-{big_files}", big_files)
    with providing(manifest.root, workers, threads) as big:
        first = ours(big, OUT / "big-base", opts)
        for run in range(1, opts.runs + 1):
            shutil.copytree(OUT / "big-base", OUT / f"big-{run}")
            shutil.copytree(OUT / "small-base", OUT / f"small-{run}")
        count = (len(changes.modified), len(changes.deleted), len(changes.added))
        refresh_index(big, change_site(manifest, *count))
        got = Scale(len(manifest.public), first, [], [])
        for run in range(1, opts.runs + 1):
            got.small.append(ours(small, OUT / f"small-{run}", opts))
            got.big.append(ours(big, OUT / f"big-{run}", opts))
    return got


# -- the report -------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    defaults = harvest_defaults()
    parser = argparse.ArgumentParser(prog="python -m bench harvest", description=__doc__)
    parser.add_argument("--files", type=int, default=20_000, help="site size (files)")
    parser.add_argument("--big", type=int, default=100_000, help="the scale site's size")
    parser.add_argument("--skip-big", action="store_true", help="no scale or memory runs")
    parser.add_argument("--runs", type=int, default=2, help="alternating runs per contender")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--per-host", type=int, default=defaults.per_host)
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    code = _commit()  # at the start: the code measured, should a commit land during the run
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    opts = Options(args.runs, args.concurrency, args.per_host)
    manifest = fresh_site(f"site-{args.files}", args.files)
    with providing(manifest.root, args.workers, args.threads) as provider:
        first = initial(provider, opts)
        inc = incremental(provider, manifest, opts, args.files)
        big = None
        if not args.skip_big:
            big = scale(provider, args.big, inc.changes, opts, args.workers, args.threads)
    report = Report("harvest", COLUMNS)
    report.rows += _initial_rows(first, manifest)
    report.rows += _incremental_rows(inc)
    if big is not None:
        report.rows += _scale_rows(big, len(manifest.public), inc.changes.count)
    report.figures |= _figures(first, manifest, inc, big)
    report.notes += _notes(args, manifest, inc, code)
    return report


def _row(metric: str, ours: object, peer: object = "", ratio: object = "", target: str = "",
         met: bool | None = None) -> list[object]:  # fmt: skip
    return [metric, ours, peer, ratio, target, "" if met is None else "yes" if met else "no"]


def _initial_rows(first: Initial, manifest: Manifest) -> list[list[object]]:
    ours_rate, wget_rate = first.rates()
    found = (first.ours_found, first.didl_found, first.wget_found)
    ours_cov, didl_cov, wget_cov = (coverage(f, manifest) for f in found)
    ratio, didl_ratio = ours_rate / wget_rate, first.didl_rate() / wget_rate
    files = len(manifest.public)
    return [
        _row(f"initial harvest of {files:,} files, pages/s (ratio ours / wget)", ours_rate,
             wget_rate, ratio, f">= {TARGET_RATE:g}x", ratio >= TARGET_RATE),
        _row("the same in one fetching process (--fetch-processes 1), pages/s (ratio ours / wget)",
             _rate(first.single), wget_rate, _rate(first.single) / wget_rate),
        _row("the same with --oai-strategy didl, pages/s (ratio ours / wget)",
             first.didl_rate(), wget_rate, didl_ratio, f">= {TARGET_RATE:g}x",
             didl_ratio >= TARGET_RATE),
        _row("initial harvest, wall s", median([c.seconds for c in first.ours]),
             median([c.seconds for c in first.wget])),
        _row("initial harvest with didl, wall s", median([c.seconds for c in first.didl])),
        _row("coverage of the site's public files (%)", 100 * ours_cov, 100 * wget_cov, "",
             "ours 100%", ours_cov == 1.0),
        _row("coverage with didl (%)", 100 * didl_cov, "", "", "100%", didl_cov == 1.0),
        _row("client peak RSS, initial harvest (MB)", max(c.rss_mb for c in first.ours),
             max(c.rss_mb for c in first.wget)),
    ]  # fmt: skip


def _incremental_rows(inc: Incremental) -> list[list[object]]:
    a = median([c.seconds for c in inc.ours])
    b, c = median(inc.naive_s), median([c.seconds for c in inc.wget])
    ch = inc.changes
    want = f"{len(ch.modified) + len(ch.added)} / {len(ch.deleted)}"
    summary = _summary(inc.ours[0])
    got = f"{summary['fetched']} / {summary['deleted']}"
    naive = " / ".join(f"{inc.naive.get(s, 0):,}" for s in (200, 304, 404))
    head = f"incremental after {ch.count} changes:"
    return [
        _row(f"{head} (a) ours vs (b) naive conditional-GET recrawl, s (ratio b / a)", a, b,
             b / a, f">= {TARGET_INCREMENTAL:g}x", b / a >= TARGET_INCREMENTAL),
        _row(f"{head} (a) ours vs (c) wget -r -N over its mirror, s (ratio c / a)", a, c,
             c / a, f">= {TARGET_INCREMENTAL:g}x", c / a >= TARGET_INCREMENTAL),
        _row("(a) archived, fetched / deleted (modified + added / deleted)", got, "", "",
             f"exactly {want}", not exact(inc)),
        _row("(a) of which inside the run (the summary's seconds; the rest is start-up), s",
             median([_summary(c)["seconds"] for c in inc.ours])),
        _row("(b) answers 200 / 304 / 404", "", naive),
        _row("(c) files wget rewrote in its mirror (of the modified)", "",
             f"{inc.wget_updated:,} (of {len(ch.modified):,})"),
        _row("wget mirror crawl that (c) starts from, s", "", inc.mirror.seconds),
    ]  # fmt: skip


def _scale_rows(big: Scale, small_files: int, count: int) -> list[list[object]]:
    big_s, small_s = median([c.seconds for c in big.big]), median([c.seconds for c in big.small])
    ratio = big_s / small_s
    rate = _summary(big.initial)["fetched"] / big.initial.seconds
    big_listed, small_listed = (max(_summary(c)["listed"] for c in r) for r in (big.big, big.small))
    return [
        _row(f"(a) on {big.files:,} vs {small_files:,} files, same changes, s (ratio)",
             big_s, small_s, ratio, f"<= {TARGET_SCALE:g}x", ratio <= TARGET_SCALE),
        _row("(a) headers listed, on the big / the first site", f"{big_listed} / {small_listed}",
             "", "", f"{count} each", big_listed == small_listed == count),
        _row(f"initial harvest of {big.files:,} files, pages/s", rate),
        _row(f"harvester peak RSS, initial harvest of {big.files:,} files (MB)",
             big.initial.rss_mb, "", "", f"< {TARGET_RSS_MB}",
             big.initial.rss_mb < TARGET_RSS_MB),
    ]  # fmt: skip


def _figures(
    first: Initial, manifest: Manifest, inc: Incremental, big: Scale | None
) -> dict[str, float | int | str]:
    ours_rate, wget_rate = first.rates()
    a = median([c.seconds for c in inc.ours])
    figures: dict[str, float | int | str] = {
        "files": len(manifest.public),
        "pages_per_s": round(ours_rate, 1),
        "wget_pages_per_s": round(wget_rate, 1),
        "ratio": round(ours_rate / wget_rate, 2),
        "single_pages_per_s": round(_rate(first.single), 1),
        "didl_pages_per_s": round(first.didl_rate(), 1),
        "didl_ratio": round(first.didl_rate() / wget_rate, 2),
        "coverage": round(coverage(first.ours_found, manifest), 4),
        "wget_coverage": round(coverage(first.wget_found, manifest), 4),
        "incremental_s": round(a, 2),
        "naive_ratio": round(median(inc.naive_s) / a, 1),
        "wget_n_ratio": round(median([c.seconds for c in inc.wget]) / a, 1),
        "exact": "yes" if not exact(inc) else "; ".join(exact(inc)),
    }
    if big is not None:
        big_s, small_s = (median([c.seconds for c in runs]) for runs in (big.big, big.small))
        figures |= {
            "big_files": big.files,
            "scale_ratio": round(big_s / small_s, 2),
            "big_rss_mb": round(big.initial.rss_mb, 1),
        }
    return figures


def _notes(args: argparse.Namespace, manifest: Manifest, inc: Incremental, code: str) -> list[str]:
    notes = [
        f"Code: {code} at the start; {os.cpu_count()} CPUs, shared with other jobs.",
        f"{len(manifest.public):,} public files ({len(manifest.linked):,} linked from "
        f"index.html); medians of {args.runs} alternating runs per contender; provider: "
        f"oai-provider serve under gunicorn, {args.workers} workers x {args.threads} threads, "
        f"on loopback; ours with --concurrency {args.concurrency} --per-host {args.per_host}, "
        "the naive recrawl (b) with the same connection limits.",
        "pages/s: files archived (ours: the summary's fetched; wget: HTTP 200 responses in its "
        "WARC) over the wall time of the process, start to exit. Coverage: the files whose "
        "200 response is in the first run's WARCs, over the site's public files.",
        "(a): `harvester harvest` rerun on the folder of an initial run. (b): aiohttp GETs of "
        "every URL the first harvest archived, with its ETag and Last-Modified, bodies read, "
        "nothing written; in-process, so without (a)'s interpreter start. (c): "
        "`wget -r -l inf -np -N --no-if-modified-since` over a copy of a plain wget mirror "
        "(wget turns -N off when writing a WARC, so (c) writes none).",
        f"Changes: {len(inc.changes.modified)} files appended to, {len(inc.changes.deleted)} "
        f"removed (never index.html or the style sheet), {len(inc.changes.added)} unlinked "
        "pages added; then the provider's index refreshed. Scale: the same numbers on the big "
        "site; each (a) there and on the first site runs on a fresh copy of an initial harvest.",
        "RSS: ru_maxrss of the command alone, from wait4 in bench/childusage.py, which forks it "
        "(what /usr/bin/time -v reports), "
        "MB = 10^6 bytes.",
    ]
    problems = exact(inc)
    notes.append("; ".join(problems) if problems else "(a) archived exactly the changes.")
    return notes
