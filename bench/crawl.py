"""``python -m bench crawl [--pages N | --site DIR [--start PATH]] [--runs K] [--concurrency C]
[--per-host P] [--processes N] [--profile]``

The link crawl (``harvester harvest --mode crawl``) against ``wget -r`` writing a WARC, both
crawling one site from its start page over loopback. The site has no OAI-PMH endpoint: by
default it is ``tests.sites.make_site`` (file names with spaces, ``%``, ``#``, ``?``,
non-ASCII and one that is not UTF-8), crawled from ``index.html``; ``--site DIR`` serves a
folder of one's own instead (a documentation tree: its pages are larger, its links deeper),
crawled from ``--start``. nginx serves it, one worker, keep-alive. Everything is written below
``bench/out/crawl/``, remade on every run:

1. the generated site, and a minimal ``nginx.conf`` in a prefix of its own; nginx runs in the
   foreground as our child, its workers as our user, and is stopped by its pid
   (``apt-get install nginx-light`` first when it is missing);
2. ours and wget alternating, ``--runs`` times each, each into a fresh folder; pages/s is the
   HTTP 200 responses in its WARC files over the wall time of the process, start to exit, and
   CPU seconds the process's own and its children's (our archiving process; nginx is shared
   and not counted);
3. two lower bounds, run after wget in each round (``bench/fetchfloor.py``): aiohttp GETs of
   the URLs wget's first run got 200 for, bodies dropped, then the same with the crawler's link
   extractor run on each page; a bound below the target ratio puts the target out of reach of
   any one-process aiohttp crawler here;
4. the URL sets: the ``WARC-Target-URI`` of every ``response`` record of the first run of
   each, read with warcio, percent-encoding hex upper-cased; what wget found and we did not;
5. with ``--profile``, one more crawl of ours under ``py-spy record`` (raw collapsed stacks in
   ``bench/out/crawl/profile.txt``); the notes give each part of the crawl's share of the
   samples (:data:`BUCKETS`) and the functions with the most time of their own.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from bench.crawlprofile import profile_notes
from bench.harness import Report, median, run_child
from coop_common.exitcode import ExitCode
from tests.servers import HOST, RunningServer, free_port, wait_until_answers
from tests.sites import Manifest, files_on_disk, href, make_site

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "crawl"
COLUMNS = ["metric", "ours", "wget", "ratio", "target", "met?"]
TARGET_RATIO = 1.5
TIMEOUT = 3600.0  # seconds any one crawl, install or server start may take
WGET = ["wget", "-r", "-l", "inf", "-np", "-e", "robots=off", "--no-verbose", "-nd"]
WGET_OK = (0, 8)  # 8: some answer was an HTTP error (none is expected on the generated site)
OURS_OK = (ExitCode.OK, ExitCode.PARTIAL)  # PARTIAL: some URL failed (a site's broken link)


@dataclass(frozen=True)
class Options:
    runs: int
    concurrency: int
    per_host: int
    schedule: str
    processes: int = 0  # --crawl-processes; 0: the default
    start: str = "index.html"  # the page both crawls start from, relative to the site's root

    def flags(self) -> list[str]:
        """Fair for one cooperative local host: no pause between requests, 8 connections."""
        chosen = ["--crawl-processes", str(self.processes)] if self.processes else []
        return ["--delay", "0", "--delay-factor", "0", "--concurrency", str(self.concurrency),
                "--crawl-per-host", str(self.per_host), "--schedule", self.schedule,
                *chosen]  # fmt: skip


# -- the server -------------------------------------------------------------------------

NGINX_CONF = """\
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    types {{
        text/html html; text/css css; image/png png; application/pdf pdf;
        text/plain txt; application/zip zip; application/javascript js; application/json json;
        image/svg+xml svg; font/woff2 woff2;
    }}
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 10000;
    keepalive_timeout 60s;
    server {{
        listen {host}:{port};
        root {root};
        autoindex off;
    }}
}}
"""


def nginx_binary() -> str:
    """The nginx executable; installed from Debian's packages when missing."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found:
        return found
    install = ["apt-get", "install", "-y", "-q", "nginx-light"]
    if subprocess.run(install, capture_output=True, timeout=TIMEOUT).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, timeout=TIMEOUT)
        subprocess.run(install, capture_output=True, timeout=TIMEOUT, check=True)
    found = shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin")
    if not found:
        raise RuntimeError("nginx is not installed and apt-get could not install it")
    return found


@contextmanager
def serving(root: Path, prefix: Path, start: str = "index.html") -> Iterator[str]:
    """nginx serving ``root`` on a free loopback port, in the foreground, its workers as our
    user (so a private folder is readable); yields its URL once ``start`` answers."""
    binary = nginx_binary()
    port = free_port()
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / "tmp" / sub).mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    conf.write_text(user + NGINX_CONF.format(prefix=prefix, host=HOST, port=port,
                                             root=root.resolve()))  # fmt: skip
    argv = [binary, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(conf),
            "-g", "daemon off;"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with RunningServer(proc, HOST, port) as server:
        wait_until_answers(f"{server.url}/{start}", proc, 30.0)
        yield server.url


# -- the contenders ---------------------------------------------------------------------


@dataclass(frozen=True)
class Child:
    seconds: float  # wall clock, start to exit
    cpu: float  # user + system seconds of the process (rusage from wait4)
    stdout: str


def measured(argv: list[str], log: Path, ok: Iterable[int] = (0,)) -> Child:
    """Run a command to its end (killed after TIMEOUT); stdout to ``log.out``, stderr to ``log``."""
    run = run_child(argv, log.with_suffix(".out"), log, timeout=TIMEOUT, ok=ok, cwd=REPO)
    return Child(run.seconds, run.usage.ru_utime + run.usage.ru_stime, run.stdout)


def ours_argv(url: str, out: Path, opts: Options) -> list[str]:
    return [sys.executable, "-m", "harvester.cli", "harvest", f"{url}/{opts.start}",
            "--out", str(out), "--mode", "crawl", "--quiet", "--json", *opts.flags()]  # fmt: skip


def ours_crawl(url: str, out: Path, opts: Options) -> Child:
    return measured(ours_argv(url, out, opts), out.with_suffix(".log"), OURS_OK)


def wget_crawl(url: str, folder: Path, start: str) -> Child:
    """A crawl from ``start`` into ``folder/wget.warc.gz``, keeping no mirror."""
    folder.mkdir(parents=True)
    warc = [f"--warc-file={folder / 'wget'}", f"--warc-tempdir={folder}"]
    argv = [*WGET, "--delete-after", "-P", str(folder / "files"), *warc, f"{url}/{start}"]
    return measured(argv, folder.with_suffix(".log"), WGET_OK)


# -- what the WARCs hold ----------------------------------------------------------------

_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")


def normal(uri: str) -> str:
    """A URI with its percent-encoding upper-cased (RFC 3986 section 6.2.2.1), and ``[`` and
    ``]`` encoded outside the host (wget keeps them raw in a query; ours encodes them)."""
    scheme, sep, rest = uri.partition("://")
    host, slash, tail = rest.partition("/")
    tail = tail.replace("[", "%5B").replace("]", "%5D")
    return _ESCAPE.sub(lambda m: m.group().upper(), f"{scheme}{sep}{host}{slash}{tail}")


def responses(warcs: Iterable[Path]) -> dict[str, int]:
    """Each ``response`` record's normalised target URI and its HTTP status."""
    found: dict[str, int] = {}
    for path in warcs:
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    uri = normal(record.rec_headers.get_header("WARC-Target-URI"))
                    found[uri] = int(record.http_headers.get_statuscode())
    return found


def missed_pages(ours: Runs, peer: Runs) -> set[str]:
    """The URLs wget's first run archived with HTTP 200 and ours has no response for."""
    found = peer.first()
    return {uri for uri in found.keys() - ours.first().keys() if found[uri] == 200}


def missed_errors(ours: Runs, peer: Runs) -> set[str]:
    """The URLs wget's first run asked for and got an error, which ours never asked for (on a
    real site, mostly wget's misreadings of script text as links)."""
    return peer.first().keys() - ours.first().keys() - missed_pages(ours, peer)


def ok_pages(found: dict[str, int]) -> int:
    return sum(1 for status in found.values() if status == 200)


@dataclass
class Runs:
    """One contender's runs, and the responses in each run's WARC files."""

    children: list[Child] = field(default_factory=list)
    found: list[dict[str, int]] = field(default_factory=list)

    def rate(self) -> float:
        """Median pages/s: the run's HTTP 200 responses over its wall time."""
        runs = zip(self.children, self.found, strict=True)
        return median([ok_pages(found) / child.seconds for child, found in runs])

    def seconds(self) -> float:
        return median([c.seconds for c in self.children])

    def cpu(self) -> float:
        return median([c.cpu for c in self.children])

    def first(self) -> dict[str, int]:
        return self.found[0]


@dataclass
class Floor:
    """The runs of one lower bound (``bench/fetchfloor.py``) over wget's URLs."""

    flags: list[str]
    children: list[Child] = field(default_factory=list)

    def rate(self) -> float:
        """Median pages/s: the pages it got answered 200 over its wall time."""
        return median([_floor_pages(child) / child.seconds for child in self.children])

    def cpu_ms(self) -> float:
        """Median CPU ms per page."""
        return median([1000 * child.cpu / _floor_pages(child) for child in self.children])


def _floor_pages(child: Child) -> int:
    pages: int = json.loads(child.stdout)["pages"]
    return pages


def floors(opts: Options) -> dict[str, Floor]:
    """Fetch only, then fetch and extract links, with as many connections as ours uses."""
    connections = ["--connections", str(opts.per_host)]
    return {"fetch": Floor(connections), "fetch + links": Floor([*connections, "--extract"])}


def floor_run(urls: Path, floor: Floor, log: Path) -> Child:
    argv = [sys.executable, "-m", "bench.fetchfloor", str(urls), *floor.flags]
    return measured(argv, log)


def alternating(url: str, opts: Options) -> tuple[Runs, Runs, dict[str, Floor]]:
    """Ours, wget, then each floor over the URLs wget's first run answered 200,
    ``opts.runs`` times, each into a fresh folder."""
    ours_runs, wget_runs, bounds = Runs(), Runs(), floors(opts)
    urls = OUT / "wget-urls.txt"
    for run in range(1, opts.runs + 1):
        out, folder = OUT / f"ours-{run}", OUT / f"wget-{run}"
        ours_runs.children.append(ours_crawl(url, out, opts))
        ours_runs.found.append(responses(sorted((out / "warcs").glob("*.warc.gz"))))
        wget_runs.children.append(wget_crawl(url, folder, opts.start))
        wget_runs.found.append(responses(sorted(folder.glob("*.warc.gz"))))
        if run == 1:
            pages = [uri for uri, status in wget_runs.first().items() if status == 200]
            urls.write_text("\n".join(pages) + "\n", encoding="utf-8")
        for number, floor in enumerate(bounds.values()):
            floor.children.append(floor_run(urls, floor, OUT / f"floor{number}-{run}.log"))
    return ours_runs, wget_runs, bounds


def summary(runs: Runs) -> dict[str, Any]:
    """Our first run's JSON summary."""
    parsed: dict[str, Any] = json.loads(runs.children[0].stdout)
    return parsed


# -- the profile ------------------------------------------------------------------------


def profiled(url: str, opts: Options) -> Path:
    """One more crawl of ours under py-spy (100 samples/s, its archiving process included);
    returns its raw stacks."""
    raw = OUT / "profile.txt"
    py_spy = str(Path(sys.executable).with_name("py-spy"))
    argv = [py_spy, "record", "--format", "raw", "--rate", "100", "--nonblocking",
            "--subprocesses", "-o", str(raw),
            "--", *ours_argv(url, OUT / "ours-profiled", opts)]  # fmt: skip
    measured(argv, OUT / "ours-profiled.log", OURS_OK)
    return raw


# -- the report -------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench crawl", description=__doc__)
    parser.add_argument("--pages", type=int, default=20_000, help="site size (HTML pages)")
    parser.add_argument("--site", type=Path, help="crawl this folder instead of a generated site")
    parser.add_argument("--start", default="index.html", help="the start page, in the site")
    parser.add_argument("--runs", type=int, default=2, help="alternating runs per contender")
    parser.add_argument("--concurrency", type=int, default=16, help="our simultaneous fetches")
    parser.add_argument("--per-host", type=int, default=8, help="our connections to the host")
    parser.add_argument("--schedule", default="capability", help="our crawl schedule")
    parser.add_argument("--processes", type=int, default=0, help="our --crawl-processes")
    parser.add_argument("--profile", action="store_true", help="one more crawl under py-spy")
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    opts = Options(args.runs, args.concurrency, args.per_host, args.schedule, args.processes,
                   args.start)  # fmt: skip
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    site = chosen_site(args)
    raw: Path | None = None
    with serving(site.root, OUT / "nginx", opts.start) as url:
        ours_runs, wget_runs, bounds = alternating(url, opts)
        if args.profile:
            raw = profiled(url, opts)
    rows = _rows(ours_runs, wget_runs, site) + _floor_rows(bounds, ours_runs, wget_runs)
    report = Report("crawl", COLUMNS, rows=rows)
    report.figures |= _figures(ours_runs, wget_runs, site)
    report.figures |= {f"{name.split()[-1]}_bound_ratio": round(floor.rate() / wget_runs.rate(), 2)
                       for name, floor in bounds.items()}  # fmt: skip
    report.notes += _notes(opts, ours_runs, wget_runs, site)
    report.notes += _floor_notes(bounds, wget_runs)
    if raw is not None:
        report.notes += profile_notes(raw)
    return report


@dataclass(frozen=True)
class Site:
    """The site crawled: its folder, how many files it holds and, when generated, its
    manifest (which files its index.html leads to)."""

    root: Path
    files: int
    manifest: Manifest | None = None


def chosen_site(args: argparse.Namespace) -> Site:
    """``--site``'s folder, or a site of ``--pages`` pages generated below :data:`OUT`."""
    if args.site is not None:
        if not (args.site / args.start).is_file():
            raise SystemExit(f"bench crawl: no start page {args.site / args.start}")
        return Site(args.site, len(files_on_disk(args.site)))
    manifest = make_site(OUT / "site", pages=args.pages, seed=1)
    return Site(manifest.root, len(manifest.public), manifest)


def _row(metric: str, ours: object, peer: object = "", ratio: object = "", target: str = "",
         met: bool | None = None) -> list[object]:  # fmt: skip
    return [metric, ours, peer, ratio, target, "" if met is None else "yes" if met else "no"]


def _rows(ours: Runs, peer: Runs, site: Site) -> list[list[object]]:
    ratio = ours.rate() / peer.rate()
    missed = missed_pages(ours, peer)
    first = summary(ours)
    return [
        _row(f"crawl of a {site.files:,}-file site, pages/s (ratio ours / wget)",
             ours.rate(), peer.rate(), ratio, f">= {TARGET_RATIO:g}x", ratio >= TARGET_RATIO),
        _row("wall s, start to exit", ours.seconds(), peer.seconds()),
        _row("CPU s, user + system (ratio ours / wget)", ours.cpu(), peer.cpu(),
             ours.cpu() / peer.cpu()),
        _row("response records in the WARCs (of them HTTP 200)", _count(ours.first()),
             _count(peer.first())),
        *_linked_rows(ours, peer, site.manifest),
        _row("URLs wget archived (HTTP 200), not we", len(missed), "", "", "0", not missed),
        _row("URLs wget got an error for, not asked by us", len(missed_errors(ours, peer))),
        _row("seen-URL cache hit rate", first["seen_hit_rate"]),
        _row("failed / refused by scope or trap rules", f"{first['failed']} / {first['refused']}"),
    ]  # fmt: skip


def _floor_rows(bounds: dict[str, Floor], ours: Runs, peer: Runs) -> list[list[object]]:
    rows = [
        _row(f"lower bound, {name} only: pages/s (ratio bound / wget)", floor.rate(),
             peer.rate(), floor.rate() / peer.rate(), f">= {TARGET_RATIO:g}x to leave room",
             floor.rate() >= TARGET_RATIO * peer.rate())
        for name, floor in bounds.items()
    ]  # fmt: skip
    cpu = " / ".join(f"{floor.cpu_ms():.2f}" for floor in bounds.values())
    pages = ok_pages(peer.first())
    rows.append(_row(f"CPU ms per page: ours; bounds ({' / '.join(bounds)})",
                     f"{1000 * ours.cpu() / ok_pages(ours.first()):.2f}; {cpu}",
                     f"{1000 * peer.cpu() / pages:.2f}"))  # fmt: skip
    return rows


def _count(found: dict[str, int]) -> str:
    return f"{len(found):,} ({ok_pages(found):,})"


def _linked_rows(ours: Runs, peer: Runs, manifest: Manifest | None) -> list[list[object]]:
    """How much of what the generated site's index.html leads to each archived."""
    if manifest is None:
        return []
    wanted = len(manifest.linked)
    archived = _linked(ours.first(), manifest)
    return [
        _row(
            f"of the {wanted:,} files linked from index.html, archived",
            archived,
            _linked(peer.first(), manifest),
            "",
            f"{wanted:,}",
            archived == wanted,
        )
    ]


def _linked(found: dict[str, int], manifest: Manifest) -> int:
    """How many of the files linked from index.html have a 200 response in ``found``."""
    origin = next(iter(found), "").split("/", 3)[:3]
    base = "/".join(origin) + "/"
    wanted = {normal(base + href("index.html", path)) for path in manifest.linked}
    return len(wanted & {uri for uri, status in found.items() if status == 200})


def _figures(ours: Runs, peer: Runs, site: Site) -> dict[str, float | int | str]:
    return {
        "files": site.files,
        "pages_per_s": round(ours.rate(), 1),
        "wget_pages_per_s": round(peer.rate(), 1),
        "ratio": round(ours.rate() / peer.rate(), 2),
        "cpu_ratio": round(ours.cpu() / peer.cpu(), 2),
        "ours_urls": len(ours.first()),
        "wget_urls": len(peer.first()),
        "missed": len(missed_pages(ours, peer)),
        "seen_hit_rate": str(summary(ours)["seen_hit_rate"]),
    }


def _notes(opts: Options, ours: Runs, peer: Runs, site: Site) -> list[str]:
    linked = site.manifest.linked if site.manifest is not None else None
    what = (
        f"{site.files:,} files in {site.root}, crawled from {opts.start}"
        if linked is None
        else f"{site.files:,} public files, {len(linked):,} linked from index.html"
    )
    notes = [
        f"{what}; nginx, 1 worker, keep-alive, on loopback. Medians of {opts.runs} "
        "alternating runs per contender, each into a fresh folder.",
        f"ours: `harvester harvest URL/{opts.start} --mode crawl {' '.join(opts.flags())}` "
        "(robots.txt obeyed). wget: `" + " ".join(WGET) + " --delete-after "
        "--warc-file=...`, one connection.",
        "pages/s: HTTP 200 response records in each run's WARC files over its wall time, "
        "interpreter start included. Ours writes four records per page (request, response, "
        "outlinks metadata, DIDL metadata), each group flushed (fsynced only with "
        "--durable), plus the SQLite state and the CDXJ index; wget writes request and "
        "response records. CPU s: rusage of the process from wait4, which counts the "
        "children it waited for (our archiving process; nginx is not included).",
    ]
    for what, urls in (("archived by wget only", missed_pages(ours, peer)),
                       ("asked by wget only, answered with an error",
                        missed_errors(ours, peer))):  # fmt: skip
        if urls:
            notes.append(f"{what} ({len(urls)}): " + ", ".join(sorted(urls)[:20]))
    extra = sorted(ours.first().keys() - peer.first().keys())
    if extra:
        notes.append(f"found by us only ({len(extra)}): " + ", ".join(extra[:20]))
    return notes


def _floor_notes(bounds: dict[str, Floor], peer: Runs) -> list[str]:
    budget = 1000 / (TARGET_RATIO * peer.rate())
    return [
        "lower bounds: `python -m bench.fetchfloor` over the URLs wget's first run got 200 "
        "for, in one process, as a child timed start to exit like the others: aiohttp GETs "
        "over as many keep-alive connections as ours uses, each body read and dropped; the "
        "second also runs the crawler's `extract_links` on each page. No WARC, state, "
        "frontier, DIDL or index. "
        f"At {TARGET_RATIO:g}x wget a page may take {budget:.2f} ms of wall time in all; "
        "bound / wget below the target means the target is out of reach of any one-process "
        "crawler on aiohttp here, whatever else it does.",
    ]
