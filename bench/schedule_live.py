"""``bench schedule_live``: the four crawl schedules, live, on throttled loopback hosts.

The comparison of ``bench/schedule.py`` (Cao, Jiang & Singh) with the real harvester in place
of the simulated engine: ``harvester harvest --mode crawl --schedule P --max-time T`` crawls
the same web for the same time under each of the four schedules, and the true quality of the
pages it archived is read back from its WARCs.

The web (``tests/multihost.py``, :func:`~tests.multihost.synthetic_web`): ``--hosts`` hosts,
each its own server process on its own address (127.0.0.2, 127.0.0.3, ...), 200-400 pages a
host. Host speeds are spread log-evenly over ``--fastest``..``--slowest`` seconds per average
page (40 % waiting for the headers, 60 % the body at the host's bandwidth), jittered per
request; page quality is a host scale times Pareto(1.5), and the slowest host's scale is 10,
so the best pages sit on the slowest host. Links are drawn in proportion to quality. Unlike
the simulation, the crawler gets no signal of a page's quality besides the links it finds:
it orders by ``--score`` (default ``backlinks``, the harvester's default).

Every host's root is a seed (the crawl's scope is the seeds' hosts). Every run: ``--slots``
concurrent fetches, one request per host at a time, delay 0, delay factor 1. Time 0 is the
first request of the crawl to any host (the hosts log arrivals); a page counts at the
``WARC-Date`` of its response record. Each schedule runs ``--runs`` times, the schedules
interleaved, and the table shows medians.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator

from bench.harness import Report
from harvester.crawl.twolevel import SCHEDULERS
from tests.multihost import Web, start_web, synthetic_web
from tests.servers import RunningServer

CHECKPOINTS = (0.25, 0.50, 1.00)
ROOT = Path(__file__).resolve().parent.parent
MAX_HOSTS = 8  # 127.0.0.2 .. 127.0.0.9 need no set-up


@dataclass(frozen=True)
class Crawl:
    """One crawl's archived pages: when each was written (s after the first request), its
    host and its true quality, in time order; and how long the harvester took to start."""

    policy: str
    times: list[float]
    hosts: list[int]
    quality: list[float]
    startup_s: float
    failed: int

    def collected(self, at: float) -> float:
        return sum(self.quality[: bisect_right(self.times, at)])

    def pages(self, at: float) -> int:
        return bisect_right(self.times, at)

    def host_pages(self, host: int, at: float) -> int:
        return self.hosts[: bisect_right(self.times, at)].count(host)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench schedule_live", description=__doc__)
    parser.add_argument("--seconds", type=float, default=25.0, help="--max-time of each crawl")
    parser.add_argument("--hosts", type=int, default=MAX_HOSTS, help=f"2..{MAX_HOSTS}")
    parser.add_argument("--runs", type=int, default=3, help="crawls per schedule")
    parser.add_argument("--slots", type=int, default=2, help="--concurrency of each crawl")
    parser.add_argument("--seed", type=int, default=1, help="of the synthetic web")
    parser.add_argument("--fastest", type=float, default=0.02, help="s per page, fastest host")
    parser.add_argument("--slowest", type=float, default=0.4, help="s per page, slowest host")
    parser.add_argument("--score", default="backlinks", help="--score of each crawl")
    args = parser.parse_args(argv)
    if not 2 <= args.hosts <= MAX_HOSTS:
        parser.error(f"--hosts must be 2..{MAX_HOSTS} (addresses 127.0.0.2..127.0.0.9)")
    if args.runs < 1 or args.slots < 1 or args.seconds <= 0:
        parser.error("--runs and --slots must be >= 1 and --seconds > 0")
    return args


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    spec = {"seed": args.seed, "hosts": args.hosts, "fastest": args.fastest}
    spec["slowest"] = args.slowest
    web = synthetic_web(**spec)
    addresses = [f"127.0.0.{2 + h}" for h in range(args.hosts)]
    servers = start_web(
        "tests.multihost:site", [{"index": h, **spec} for h in range(args.hosts)], addresses
    )
    try:
        probed = [_probe(server) for server in servers]
        crawls: dict[str, list[Crawl]] = {p: [] for p in SCHEDULERS}
        for _ in range(args.runs):
            for policy in SCHEDULERS:
                crawls[policy].append(crawl(servers, web, policy, args))
    finally:
        for server in servers:
            server.stop()
    return _report(web, probed, crawls, args)


def crawl(servers: list[RunningServer], web: Web, policy: str, args: argparse.Namespace) -> Crawl:
    """Run the harvester's crawl once with ``policy`` and read back what it archived."""
    with tempfile.TemporaryDirectory(prefix="schedule-live-") as out:
        argv = [sys.executable, "-m", "harvester.cli", "harvest", servers[0].url + "/"]
        argv += ["--out", out, "--mode", "crawl", "--quiet", "--json", "--schedule", policy]
        argv += ["--score", args.score, "--max-time", str(args.seconds), "--delay", "0"]
        argv += ["--delay-factor", "1", "--concurrency", str(args.slots), "--crawl-per-host", "1"]
        for server in servers[1:]:
            argv += ["--seed", server.url + "/"]
        launched = time.time()
        done = subprocess.run(
            argv, capture_output=True, text=True, cwd=ROOT, timeout=args.seconds + 180
        )
        if done.returncode != 0:
            raise RuntimeError(f"harvester exited {done.returncode}: {done.stderr[-2000:]}")
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        start = _first_request(servers, launched)
        pages = sorted(_archived(Path(out), servers, web, start))
    times, hosts, quality = [p[0] for p in pages], [p[1] for p in pages], [p[2] for p in pages]
    return Crawl(policy, times, hosts, quality, start - launched, int(summary["failed"]))


def _archived(
    out: Path, servers: list[RunningServer], web: Web, start: float
) -> list[tuple[float, int, float]]:
    """(seconds after ``start``, host, true quality) of every response record."""
    index = {urlsplit(s.url).netloc: h for h, s in enumerate(servers)}
    found = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "response":
                    continue
                url = urlsplit(record.rec_headers.get_header("WARC-Target-URI"))
                host = index[url.netloc]
                at = _warc_time(record.rec_headers.get_header("WARC-Date")) - start
                found.append((at, host, web.quality(host, url.path or "/")))
    return found


def _warc_time(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def _first_request(servers: list[RunningServer], after: float) -> float:
    """When the crawl launched at ``after`` sent its first request to any host."""
    arrivals = [t for server in servers for t in _arrivals(server)]
    return min(t for t in arrivals if t >= after)


def _probe(server: RunningServer, pages: int = 4) -> float:
    """Mean seconds to GET pages 1..``pages`` of ``server`` (sizes vary), as a client sees it."""
    times = []
    for page in range(1, pages + 1):
        began = time.monotonic()
        with urllib.request.urlopen(f"{server.url}/p{page}.html", timeout=10) as response:
            response.read()
        times.append(time.monotonic() - began)
    return statistics.mean(times)


def _arrivals(server: RunningServer) -> list[float]:
    """When each request the host has served so far arrived (Unix time)."""
    with urllib.request.urlopen(server.url + "/_log", timeout=10) as response:
        return [float(arrival) for arrival, _path in json.loads(response.read())]


# -- the report ------------------------------------------------------------------------


def _report(
    web: Web, probed: list[float], crawls: dict[str, list[Crawl]], args: argparse.Namespace
) -> Report:
    columns = ["policy", "pages by T"]
    columns += [f"quality by {f:.0%} T" for f in CHECKPOINTS]
    columns += ["x bfs at 25%", "x bfs at T", "slowest-host pages"]
    report = Report("schedule_live", columns)
    slow = max(range(len(web.service_s)), key=lambda h: web.service_s[h])
    got = {p: [_median(runs, f * args.seconds) for f in CHECKPOINTS] for p, runs in crawls.items()}
    for policy, runs in crawls.items():
        pages = statistics.median(c.pages(args.seconds) for c in runs)
        slow_pages = statistics.median(c.host_pages(slow, args.seconds) for c in runs)
        ratios = [_ratio(got[policy][i], got["bfs"][i]) for i in (0, -1)]
        report.rows.append([policy, pages, *got[policy], *ratios, slow_pages])
        report.figures[f"{policy}_pages"] = pages
        for fraction, value in zip(CHECKPOINTS, got[policy], strict=True):
            report.figures[f"{policy}_quality_{round(fraction * 100)}"] = round(value, 1)
    for peer in ("bfs", "performance", "quality"):
        for i, fraction in enumerate(CHECKPOINTS):
            ratio = _ratio(got["capability"][i], got[peer][i])
            report.figures[f"capability_over_{peer}_{round(fraction * 100)}"] = round(ratio, 3)
    report.notes += [
        _describe(web, probed, args),
        _verdict(got),
        _by_host(web, crawls, args.seconds),
        _spread(crawls, args.seconds),
    ]
    return report


def _median(runs: list[Crawl], at: float) -> float:
    return statistics.median(c.collected(at) for c in runs)


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.inf


def _describe(web: Web, probed: list[float], args: argparse.Namespace) -> str:
    total = web.total_quality()
    hosts = ", ".join(
        f"{web.service_s[h] * 1000:.0f} ms ({probed[h] * 1000:.0f} probed, {len(pages)} pages, "
        f"{sum(p.quality for p in pages.values()) / total:.0%} of quality)"
        for h, pages in enumerate(web.hosts)
    )
    return (
        f"Web: {len(web.hosts)} hosts, {web.pages():,} pages, total quality {total:,.0f}; "
        f"T = {args.seconds:g} s, {args.slots} slots, --score {args.score}, "
        f"{args.runs} run(s) per schedule, medians. Hosts (s per page): {hosts}."
    )


def _verdict(got: dict[str, list[float]]) -> str:
    cap, bfs = got["capability"][0], got["bfs"][0]
    first = "met" if cap >= 1.3 * bfs else "NOT met"
    beaten = [
        f"{peer} at {fraction:.0%}"
        for i, fraction in enumerate(CHECKPOINTS)
        for peer in ("performance", "quality")
        if got["capability"][i] < got[peer][i]
    ]
    second = f"NOT met ({', '.join(beaten)})" if beaten else "met"
    order = " > ".join(sorted(got, key=lambda p: -got[p][-1]))
    return (
        f"capability >= 1.3x bfs at 25% of T: {first} ({_ratio(cap, bfs):.2f}x); capability >= "
        f"performance and quality at 25/50/100% of T: {second}. Order by T: {order}."
    )


def _by_host(web: Web, crawls: dict[str, list[Crawl]], seconds: float) -> str:
    fastest_first = sorted(range(len(web.service_s)), key=lambda h: web.service_s[h])
    counts = "; ".join(
        f"{p}: "
        + " / ".join(
            f"{statistics.median(c.host_pages(h, seconds) for c in cs):g}" for h in fastest_first
        )
        for p, cs in crawls.items()
    )
    return f"Pages by T per host, fastest host first (medians): {counts}."


def _spread(crawls: dict[str, list[Crawl]], seconds: float) -> str:
    runs = "; ".join(
        f"{p}: " + ", ".join(f"{c.collected(seconds):,.0f} ({c.pages(seconds)} p)" for c in cs)
        for p, cs in crawls.items()
    )
    startup = statistics.median(c.startup_s for cs in crawls.values() for c in cs)
    failed = sum(c.failed for cs in crawls.values() for c in cs)
    return (
        f"Every run, quality by T (pages): {runs}. Harvester start-up (launch to first request), "
        f"median {startup:.1f} s; failed fetches over all runs: {failed}."
    )
