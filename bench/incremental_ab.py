"""``python -m bench incremental_ab --base CHECKOUT [--files N] [--runs K]``

"No speed lost" for the incremental harvest: this checkout's harvester against another
checkout's (an older commit in a ``git worktree``, with its own ``.venv``), on the same site
and the same provider, alternating A B, B A, ... so load drifts hit both alike.

1. A ``--files`` site (``tests.sites.make_site``) served by this checkout's provider under
   gunicorn, as ``bench harvest`` serves it.
2. Each checkout makes its own initial harvest (the state's schema may differ between them).
3. 1 % of the files are modified, 0.5 % removed and 0.5 % added; the index is refreshed.
4. ``--runs`` times, each checkout reruns on a fresh copy of its initial folder; every rerun
   must archive exactly the changes. Reported: median wall seconds and median CPU seconds
   (user + system of the harvester process, from ``wait4``), which the machine's load moves
   far less than wall time.

Both checkouts are byte-compiled first, as ``python -m bench`` does for this one.
"""

from __future__ import annotations

import argparse
import compileall
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from bench import harvest
from bench.harness import Report, median, run_child

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "incremental_ab"
TIMEOUT = 900.0
PACKAGES = ("harvester", "server_module", "coop_common")


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float


def _python(checkout: Path) -> Path:
    python = checkout / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{checkout}: no .venv; run `make .venv/.installed` there first")
    return python


def _compile(checkout: Path) -> None:
    for package in PACKAGES:
        if (checkout / package).is_dir():
            compileall.compile_dir(checkout / package, quiet=1)


def _harvest(checkout: Path, url: str, out: Path, tag: str) -> tuple[Sample, dict[str, object]]:
    argv = [str(_python(checkout)), "-m", "harvester.cli", "harvest", url, "--out", str(out),
            "--quiet", "--json", "--concurrency", "16", "--per-host", "8"]  # fmt: skip
    logs = OUT / "logs"
    run = run_child(argv, logs / f"{tag}.out", logs / f"{tag}.err", timeout=TIMEOUT, cwd=checkout)
    cpu = run.usage.ru_utime + run.usage.ru_stime
    return Sample(run.seconds, cpu), json.loads(run.stdout.strip().splitlines()[-1])


def _rerun(checkout: Path, name: str, url: str, index: int, expected: tuple[int, int]) -> Sample:
    folder = OUT / f"incremental-{name}-{index}"
    shutil.copytree(OUT / f"initial-{name}", folder)
    sample, summary = _harvest(checkout, url, folder, folder.name)
    got = (summary.get("fetched"), summary.get("deleted"))
    if got != expected:
        raise RuntimeError(f"{name} run {index} archived {got} (fetched, deleted), not {expected}")
    return sample


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench incremental_ab")
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=6)
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    checkouts = {"this": REPO, "base": args.base.resolve()}
    for checkout in checkouts.values():
        _compile(checkout)
    shutil.rmtree(OUT, ignore_errors=True)
    harvest.OUT = OUT
    manifest = harvest.fresh_site("site", args.files)
    samples: dict[str, list[Sample]] = {name: [] for name in checkouts}
    with harvest.providing(manifest.root, workers=2, threads=4) as provider:
        for name, checkout in checkouts.items():
            _harvest(checkout, provider.url, OUT / f"initial-{name}", f"initial-{name}")
        modified, removed = args.files // 100, args.files // 200
        changes = harvest.change_site(manifest, modified, removed, removed)
        harvest.refresh_index(provider, changes)
        expected = (modified + removed, removed)
        for index in range(args.runs):
            order = list(checkouts) if index % 2 == 0 else list(checkouts)[::-1]
            for name in order:
                samples[name].append(_rerun(checkouts[name], name, provider.url, index, expected))
    return _report(args, samples)


def _report(args: argparse.Namespace, samples: dict[str, list[Sample]]) -> Report:
    wall = {name: median([s.wall for s in runs]) for name, runs in samples.items()}
    cpu = {name: median([s.cpu for s in runs]) for name, runs in samples.items()}
    report = Report("incremental_ab", ["metric", "this checkout", "base", "ratio this / base"])
    report.rows = [
        [
            "incremental rerun, median wall s",
            wall["this"],
            wall["base"],
            wall["this"] / wall["base"],
        ],
        ["incremental rerun, median CPU s", cpu["this"], cpu["base"], cpu["this"] / cpu["base"]],
    ]
    report.figures = {
        "files": args.files,
        "runs": args.runs,
        "wall_ratio": round(wall["this"] / wall["base"], 3),
        "cpu_ratio": round(cpu["this"] / cpu["base"], 3),
    }
    report.notes = [f"base checkout: {args.base}", f"python: {sys.version.split()[0]}"]
    return report
