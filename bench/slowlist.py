"""``python -m bench slowlist [--files N] [--page-hold S] [--runs K]``

Fetching while a slow list is read (:mod:`harvester.listed.follower`), side by side with the
same harvester fetching only after the list (``bench/_listafter.py``), as a remote provider
would make it: the project's provider holds each list page ``--page-hold`` seconds (pages of
1,000 identifiers; ``tests/counting_provider.py`` under werkzeug's threaded server, over
loopback), and answers each file at once. Each run starts from an empty folder; the two take
turns ``--runs`` times. Reported: wall seconds, files archived a second, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import Report, median, run_child
from harvester.samplesite import make_site
from tests.servers import RunningServer, start_wsgi

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "slowlist"
SETTLE = 2.1  # past the index's racy-ctime window
PAGE = 1000
CONTENDERS = {
    "follow": [sys.executable, "-m", "harvester.cli"],
    "after": [sys.executable, str(REPO / "bench" / "_listafter.py")],
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench slowlist", description=__doc__)
    parser.add_argument("--files", type=int, default=5000, help="the site's size")
    parser.add_argument("--page-hold", type=float, default=0.5, help="seconds a list page takes")
    parser.add_argument("--runs", type=int, default=2, help="alternating runs per contender")
    return parser.parse_args(argv)


def harvest(server: RunningServer, contender: str, out: Path) -> tuple[float, int]:
    """Wall seconds and files archived of one harvest into ``out``."""
    argv = [*CONTENDERS[contender], "harvest", server.url, "--out", str(out), "--quiet", "--json"]
    logs = OUT / "logs" / f"{out.name}.out", OUT / "logs" / f"{out.name}.err"
    child = run_child(argv, *logs, timeout=3600, cwd=REPO)
    fetched = int(json.loads(child.stdout)["fetched"])
    shutil.rmtree(out)
    return child.seconds, fetched


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    site = make_site(OUT / "site", pages=max(1, round(args.files / 1.1)), seed=1)
    time.sleep(SETTLE)
    settings = {"docroot": str(site.root), "base_url": "http://{host}:{port}"}
    settings |= {"index_path": str(OUT / "index.sqlite"), "refresh_interval": 0, "plugins": False}
    settings |= {"page_size": PAGE, "hold": 0.0, "list_hold": args.page_hold}
    got: dict[str, list[tuple[float, int]]] = {c: [] for c in CONTENDERS}
    app = "tests.counting_provider:create_app"
    with start_wsgi(app, settings, ready_path="/_requests", timeout=600) as server:
        time.sleep(SETTLE)
        for number in range(1, args.runs + 1):
            for contender in CONTENDERS:
                got[contender].append(harvest(server, contender, OUT / f"{contender}-{number}"))
    files = len(site.public)
    seconds = {c: median([s for s, _f in runs]) for c, runs in got.items()}
    fewest = {c: min(f for _s, f in runs) for c, runs in got.items()}
    pages = -(-files // PAGE)
    report = Report("slowlist", ["metric", "follow", "after the list", "after / follow"])
    report.rows += [
        [f"{files:,} files, {pages} list pages of {args.page_hold:g} s: wall s",
         seconds["follow"], seconds["after"], seconds["after"] / seconds["follow"]],
        ["files a second", files / seconds["follow"], files / seconds["after"], ""],
        ["files archived (fewest of the runs)", fewest["follow"], fewest["after"], ""],
    ]  # fmt: skip
    report.figures["speedup"] = round(seconds["after"] / seconds["follow"], 3)
    report.notes += [
        f"{os.cpu_count()} CPUs, shared; 1-minute load average at the end: "
        f"{os.getloadavg()[0]:.2f}",
        f"Medians of {args.runs} runs per contender, taking turns; the list alone holds "
        f"{pages * args.page_hold:g} s.",
        "git: " + subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip(),
    ]  # fmt: skip
    return report
