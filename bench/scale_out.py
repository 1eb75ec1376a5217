"""``bench scale_out``: 1-4 harvester workers crawl one job on a PostgreSQL state (issue 16).

The web is the scheduling benchmarks' (``tests/multihost.py``): ``--hosts`` loopback hosts
(127.0.0.2, ...) of different speeds (0.08-0.2 s a page), latency-bound. Many hosts of about
the same size (30-40 pages): on a web of a few hosts the slowest alone is the critical path,
and no number of workers can beat it. Every worker runs with the harvester's default flags
(``harvester harvest URL --out DIR --state postgresql://... --workers N`` and the other hosts
as ``--seed``: ``--crawl-per-host 2``, ``--concurrency 16``), so more workers fetch more
hosts at once, while the host leases keep at most ``--crawl-per-host`` requests per host
across all of them, measured at the servers (``/_spans``). Then: a worker
SIGKILLed mid-crawl and a fresh one started (``--lease`` short), counting duplicates and
losses and timing the reclaim of the dead worker's hosts; and the claim latency, measured,
from which the lease table's load at 16 and 64 workers is estimated.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from bench.harness import Report
from harvester.storage import open_state
from tests.multihost import captures, most_at_once, start_web, synthetic_web
from tests.pgcluster import PGCluster
from tests.servers import RunningServer


def run(argv: list[str]) -> Report:
    ap = argparse.ArgumentParser(prog="bench scale_out")
    ap.add_argument("--hosts", type=int, default=24)
    ap.add_argument("--pages", type=int, default=30, help="Pages per host, about.")
    ap.add_argument("--lease", type=float, default=3.0, help="Lease of the SIGKILL run.")
    args = ap.parse_args(argv)
    kw = {"hosts": args.hosts, "min_pages": args.pages, "max_pages": args.pages + 10,
          "fastest": 0.08, "slowest": 0.2, "jitter": 0.1}  # fmt: skip
    web = synthetic_web(1, args.hosts, args.pages, args.pages + 10, 0.08, 0.2)
    addresses = [f"127.0.0.{2 + h}" for h in range(args.hosts)]
    servers = start_web("tests.multihost:site", [{"index": h, **kw} for h in range(args.hosts)],
                        addresses)  # fmt: skip
    cluster = PGCluster()
    cluster.start()
    report = Report("scale_out", ["workers", "seconds", "speed-up", "first request s",
                                  "crawl speed-up", "pages", "duplicates", "lost",
                                  "most in flight per host"])  # fmt: skip
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = crawl_base = None
            for workers in (1, 2, 3, 4):
                seconds, first, seen, most = _crawl(servers, cluster, Path(tmp) / f"w{workers}",
                                                    workers)  # fmt: skip
                base, crawl_base = base or seconds, crawl_base or seconds - first
                dup = sum(seen.values()) - len(seen)
                report.rows.append([workers, seconds, base / seconds, first,
                                    crawl_base / (seconds - first), len(seen), dup,
                                    web.pages() - len(seen), most])  # fmt: skip
                report.figures[f"speedup_{workers}"] = round(base / seconds, 3)
                report.figures[f"most_in_flight_{workers}"] = most
            _killed(servers, cluster, Path(tmp) / "kill", args, web.pages(), report)
            _claims(cluster, report)
    finally:
        cluster.stop()
        for server in servers:
            server.stop()
    return report


def _command(servers: list[RunningServer], out: Path, state: str) -> list[str]:
    """The command as a user runs it: every flag but the state, the seeds and --quiet its
    default."""
    seeds = [a for s in servers[1:] for a in ("--seed", s.url + "/")]
    return [sys.executable, "-m", "harvester.cli", "harvest", servers[0].url + "/", "--out",
            str(out), "--state", state, "--quiet", *seeds]  # fmt: skip


def _spans(servers: list[RunningServer]) -> list[list[list[float]]]:
    spans = []
    for server in servers:
        with urllib.request.urlopen(server.url + "/_spans", timeout=10) as response:
            spans.append(json.loads(response.read()))
    return spans


def _crawl(
    servers: list[RunningServer], cluster: PGCluster, out: Path, workers: int
) -> tuple[float, float, Counter[str], int]:
    """Seconds to completion, seconds before the first page request (the workers' start-up),
    the captures of each URL, and the most requests ever in flight to one host."""
    state = cluster.new_database()
    before = [len(s) for s in _spans(servers)]
    started, wall = time.monotonic(), time.time()
    cmd = [*_command(servers, out, state), "--workers", str(workers)]
    done = subprocess.run(cmd, timeout=900, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{workers} workers failed: {done.stderr[-2000:]}")
    seconds = time.monotonic() - started
    after = [s[skip:] for s, skip in zip(_spans(servers), before, strict=True)]
    first = min(span[0] for spans in after for span in spans) - wall
    return seconds, first, captures(out), max(most_at_once(s) for s in after)


def _killed(servers: list[RunningServer], cluster: PGCluster, out: Path,
            args: argparse.Namespace, pages: int, report: Report) -> None:  # fmt: skip
    """Two workers; one SIGKILLed once it archived a third of the web; a third starts."""
    state = cluster.new_database()
    site = servers[0].url + "/"
    cmd = [*_command(servers, out, state), "--lease", str(args.lease)]
    procs = {w: subprocess.Popen([*cmd, "--worker", w], stderr=subprocess.DEVNULL)
             for w in ("a", "b")}  # fmt: skip
    with open_state(state) as st:
        assert st.leases is not None
        deadline = time.monotonic() + 300
        while sum(st.captures_by_worker(site).values()) < pages // 3:
            if time.monotonic() > deadline:
                raise RuntimeError("the workers archived too little in 300 s")
            time.sleep(0.05)
        os.kill(procs["a"].pid, signal.SIGKILL)
        killed = time.monotonic()
        procs["a"].wait()
        dead = {h for h, w in st.leases.held(site).items() if w == "a"}
        heir = subprocess.Popen([*cmd, "--worker", "c"], stderr=subprocess.DEVNULL)
        while dead and time.monotonic() - killed < 120:
            held = st.leases.held(site)
            if any(held.get(h) not in (None, "a") for h in dead):
                break
            time.sleep(0.02)
        reclaim = time.monotonic() - killed
    procs["b"].wait(timeout=900)
    heir.wait(timeout=900)
    seen = captures(out)
    report.notes.append(
        f"SIGKILL of 1 of 2 workers after {pages // 3} pages (--lease {args.lease:g} s): "
        f"{len(dead)} hosts held by it, reclaimed {reclaim:.2f} s after the kill; "
        f"{sum(seen.values()) - len(seen)} duplicate captures, {pages - len(seen)} lost"
    )
    report.figures.update(reclaim_s=round(reclaim, 3), kill_lost=pages - len(seen),
                          kill_duplicates=sum(seen.values()) - len(seen))  # fmt: skip


def _claims(cluster: PGCluster, report: Report, hosts: int = 64, rounds: int = 200) -> None:
    """Claim latency on a lease table of ``hosts`` hosts, and the load it means for 16/64."""
    url, site = cluster.new_database(), "http://bench/"
    with open_state(url) as st:
        assert st.leases is not None
        st.add_pending(site, [f"http://h{h}.example/{p}" for h in range(hosts) for p in range(20)])
        claim, ack = [], []
        for _ in range(rounds):
            t = time.perf_counter()
            st.leases.heartbeat(site, "w")
            (lease,) = st.leases.claim_hosts(site, "w", "fetch", 1)
            claim.append(time.perf_counter() - t)
            t = time.perf_counter()
            with st.transaction():
                st.leases.acknowledge(site, lease, f"http://{lease.host}/0")
            ack.append(time.perf_counter() - t)
            st.leases.release(site, lease)
    c, a = statistics.median(claim), statistics.median(ack)
    report.figures.update(claim_ms=round(c * 1000, 3), ack_ms=round(a * 1000, 3))
    for workers in (16, 64):
        # each worker rebalances four times a second (every 0.25 s), acknowledges ~5 pages
        busy = workers * (4 * c + 5 * a)
        report.notes.append(
            f"{workers} workers: claim {c * 1000:.2f} ms, ack {a * 1000:.2f} ms (median, one "
            f"client) -> the lease table is busy {busy:.2f} s per second"
            f" ({busy * 100:.0f} % of one database core)"
        )
