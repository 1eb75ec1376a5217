"""``bench recrawl_live``: ``harvester watch`` with default flags against a uniform revisit loop.

For each site shape (``--shapes``, run side by side), two copies of one loopback site
(``tests/changing_site.py``, the same seed and start, so the same hidden change times), one
per contender, watched side by side for ``--seconds`` (at most 300) at the same ``--rate`` of
requests a second:

- **adaptive**: ``harvester watch URL --rate R --max-time S`` (every other flag its default)
  in a child process, archiving into WARC; what it captured is read back from its WARC files.
- **uniform**: a plain loop written here: ``/`` first, then round-robin over the URLs it
  links to (and ``/``), one conditional GET (``If-None-Match``, ``If-Modified-Since``) every
  ``1 / R`` seconds, keeping the version each 200 hands out.

The shapes, ``--pages`` pages each (mean change intervals log-uniform over the ranges):

- ``minutes``: 70 % never changing, 25 % every 1 .. 10 min, 5 % every 3 .. 20 s;
- ``seconds``: 60 % never changing, 30 % every 30 s .. 5 min, 10 % every 2 .. 8 s.

In both, some pages change faster than the loop's cycle (``pages / rate`` seconds).

Figures: **fetches**; **versions** archived (distinct page versions); **changes** captured
(versions beyond each page's first); time-averaged **freshness** over the run (the share of
pages whose latest capture is still the live version, from the site's change times); and
for the watch, the versions its site handed out that are missing from its WARCs (goal 0).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import subprocess
import sys
import tempfile
import time
from bisect import bisect_right
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import requests
from warcio.archiveiterator import ArchiveIterator

from bench.harness import Report
from tests.changing_site import site_changes
from tests.servers import RunningServer, start_wsgi

MAX_SECONDS = 300.0
COLUMNS = ("shape", "contender", "fetches", "versions", "changes", "changes / fetch")
COLUMNS += ("freshness", "missing")
VERSION = re.compile(r"<body>(/p\d+) version (\d+)<")


# shape: (share, (shortest, longest mean interval, s)) of the slow and the fast pages
SHAPES = {
    "minutes": ((0.25, (60.0, 600.0)), (0.05, (3.0, 20.0))),
    "seconds": ((0.30, (30.0, 300.0)), (0.10, (2.0, 8.0))),
}


def draw_rates(pages: int, seed: int, shape: str = "minutes") -> list[float]:
    """Each page's change rate: never, slow or fast in the shares of ``SHAPES[shape]``."""
    (slow, slow_range), (fast, fast_range) = SHAPES[shape]
    rng = random.Random(seed)
    rates = []
    for _ in range(pages):
        kind = rng.random()
        low, high = slow_range if kind < slow else fast_range
        mean = math.exp(rng.uniform(math.log(low), math.log(high)))
        rates.append(0.0 if kind >= slow + fast else 1 / mean)
    return rates


@dataclass
class Captures:
    """One contender's run: every capture as (path, epoch s), the versions it archived."""

    fetches: int = 0
    times: list[tuple[str, float]] = field(default_factory=list)
    versions: set[tuple[str, int]] = field(default_factory=set)

    @property
    def changes(self) -> int:
        return len(self.versions) - len({path for path, _v in self.versions})

    def freshness(
        self, changes: list[list[float]], start: float, window: tuple[float, float]
    ) -> float:
        """Time-averaged share of the pages whose latest capture is the live version."""
        by_page: dict[int, list[float]] = {}
        for path, at in self.times:
            if path.startswith("/p"):
                by_page.setdefault(int(path[2:]), []).append(at - start)
        low, high = window[0] - start, window[1] - start
        fresh = 0.0
        for page, captures in by_page.items():
            captures.sort()
            for at, following in zip(captures, [*captures[1:], math.inf], strict=True):
                index = bisect_right(changes[page], at)
                stale = changes[page][index] if index < len(changes[page]) else math.inf
                fresh += max(0.0, min(stale, following, high) - max(at, low))
        return fresh / (len(changes) * (high - low))


def uniform_loop(url: str, rate: float, until: float) -> Captures:
    """Round-robin conditional GETs over ``/`` and the pages it links to, ``rate`` a second."""
    got = Captures()
    validators: dict[str, dict[str, str]] = {}
    session = requests.Session()
    paths = ["/"]
    k, start = 0, time.time()
    while (at := start + k / rate) < until:
        time.sleep(max(0.0, at - time.time()))
        path = paths[k % len(paths)]
        k += 1
        resp = session.get(url + path, headers=validators.get(path, {}), timeout=10)
        got.fetches += 1
        got.times.append((path, time.time()))
        if resp.status_code != 200:
            continue
        validators[path] = _validators(resp)
        if path == "/" and len(paths) == 1:
            paths += sorted(set(re.findall(r'href="(/p\d+)"', resp.text)), key=_page)
        if match := VERSION.search(resp.text):
            got.versions.add((match[1], int(match[2])))
    return got


def _validators(resp: requests.Response) -> dict[str, str]:
    pairs = (("If-None-Match", "ETag"), ("If-Modified-Since", "Last-Modified"))
    return {ask: resp.headers[have] for ask, have in pairs if have in resp.headers}


def _page(path: str) -> int:
    return int(path[2:])


def watch_captures(out: Path, fetches: int) -> Captures:
    """What ``harvester watch`` archived: every response and revisit record of its WARCs."""
    got = Captures(fetches=fetches)
    for warc in sorted(out.glob("*/warcs/*.warc.gz")):
        with open(warc, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type not in ("response", "revisit"):
                    continue
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                when = datetime.fromisoformat(record.rec_headers.get_header("WARC-Date"))
                got.times.append(("/" + uri.split("/", 3)[-1], when.timestamp()))
                if record.rec_type == "response":
                    text = record.content_stream().read().decode("utf-8", "replace")
                    if match := VERSION.search(text):
                        got.versions.add((match[1], int(match[2])))
    return got


def handed_out(log: Path) -> set[tuple[str, int]]:
    if not log.exists():
        return set()
    pairs = (line.split() for line in log.read_text().splitlines())
    return {(path, int(version)) for path, version in pairs}


def run_watch(url: str, out: Path, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "harvester.cli", "watch", url + "/", "--out", str(out)]
    argv += ["--rate", str(args.rate), "--max-time", str(args.seconds), "--quiet", "--json"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench recrawl_live", description=__doc__)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rate", type=float, default=5.0, help="requests a second, each")
    parser.add_argument("--seconds", type=float, default=180.0, help=f"at most {MAX_SECONDS:g}")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shapes", default="minutes,seconds", help="of " + ",".join(SHAPES))
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= MAX_SECONDS or args.rate <= 0 or args.pages <= 0:
        parser.error(f"--seconds must be in (0, {MAX_SECONDS:g}], --rate and --pages positive")
    args.shapes = args.shapes.split(",")
    if not args.shapes or any(shape not in SHAPES for shape in args.shapes):
        parser.error(f"--shapes must name some of {', '.join(SHAPES)}")
    return args


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    report = Report("recrawl_live", [*COLUMNS])
    with ThreadPoolExecutor(max_workers=len(args.shapes)) as pool:  # the shapes side by side
        runs = list(pool.map(lambda shape: _run_shape(args, shape), args.shapes))
    for run_of_shape in runs:
        _report(args, *run_of_shape, report)
    return report


def _run_shape(args: argparse.Namespace, shape: str) -> tuple[Seen, Captures, Captures, int]:
    rates = draw_rates(args.pages, args.seed, shape)
    with tempfile.TemporaryDirectory(prefix="recrawl-live-") as tmp:
        root = Path(tmp)
        start = time.time()
        servers: list[RunningServer] = []
        for name in ("adaptive", "uniform"):
            kwargs = {"rates": rates, "seed": args.seed, "start": start}
            kwargs["log"] = str(root / f"{name}.log")
            servers.append(start_wsgi("tests.changing_site:changing_site", kwargs))
        try:
            began = time.time()
            proc = run_watch(servers[0].url, root / "watch", args)
            uniform = uniform_loop(servers[1].url, args.rate, began + args.seconds)
            stdout, stderr = proc.communicate(timeout=args.seconds + 120)
            ended = time.time()
        finally:
            for server in servers:
                server.stop()
        if proc.returncode != 0:
            raise RuntimeError(f"harvester watch failed: {stderr.decode()[-2000:]}")
        summary = json.loads(stdout)
        adaptive = watch_captures(root / "watch", int(summary["fetches"]))
        missing = handed_out(root / "adaptive.log") - adaptive.versions
    changes = site_changes(rates, args.seed)
    window = (began, min(ended, began + args.seconds))
    return Seen(shape, rates, changes, start, window), adaptive, uniform, len(missing)


@dataclass
class Seen:
    """One shape's run: its pages' rates and change times, the site's start, the window."""

    shape: str
    rates: list[float]
    changes: list[list[float]]
    start: float
    window: tuple[float, float]


def _report(
    args: argparse.Namespace,
    seen: Seen,
    adaptive: Captures,
    uniform: Captures,
    missing: int,
    report: Report,
) -> None:
    shape, changes, start, window = seen.shape, seen.changes, seen.start, seen.window
    made = sum(bisect_right(c, window[1] - start) for c in changes)
    for name, got in (("adaptive", adaptive), ("uniform", uniform)):
        fresh = got.freshness(changes, start, window)
        per_fetch = got.changes / got.fetches if got.fetches else 0.0
        report.rows.append(
            [
                shape,
                name,
                got.fetches,
                len(got.versions),
                got.changes,
                per_fetch,
                fresh,
                missing if name == "adaptive" else "-",
            ]
        )
        report.figures[f"{shape}_{name}_changes"] = got.changes
        report.figures[f"{shape}_{name}_fetches"] = got.fetches
        report.figures[f"{shape}_{name}_freshness"] = round(fresh, 4)
    ratio = adaptive.changes / max(uniform.changes, 1)
    per_fetch = (adaptive.changes / max(adaptive.fetches, 1)) / max(
        uniform.changes / max(uniform.fetches, 1), 1e-9
    )
    report.figures[f"{shape}_changes_ratio"] = round(ratio, 3)
    report.figures[f"{shape}_changes_per_fetch_ratio"] = round(per_fetch, 3)
    report.figures[f"{shape}_missing_versions"] = missing
    never = sum(r == 0 for r in seen.rates)
    report.notes.append(
        f"{shape}: {args.pages} pages ({never} never change), {made} changes made in the run, "
        f"{args.seconds:g} s at {args.rate:g} requests/s each, seed {args.seed}, the watch "
        f"with default flags. Changes captured, adaptive / uniform: {ratio:.2f}x "
        f"({per_fetch:.2f}x per fetch; goal >= 1.5x)."
    )
