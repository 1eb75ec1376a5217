"""``python -m bench checkouts --base CHECKOUT [--files N] [--runs K] [--jobs J,...]``

"No speed lost" between two commits: this checkout's provider and harvester against another
checkout's (an older commit in a ``git worktree``, with its own ``.venv``), on the same site,
alternating A B, B A, ... so that load drifts hit both alike. The measure is CPU seconds
(user + system from ``wait4``), which the machine's load moves far less than wall time; the
median wall seconds are reported beside them. Every command runs with its default flags
but ``--no-plugins`` on the provider's side (the plugins' tools would be most of its time, the
same in both; ``bench plugins`` measures them).

Jobs (all by default):

- ``index``: ``oai-provider index`` of a ``--files`` site (``tests.sites.make_site``) into a
  fresh index;
- ``list``: ``oai-provider serve`` of that index (1 worker, 1 thread) and a full
  ``ListIdentifiers`` harvest by a plain client; the CPU is the server's, master and worker
  (the master waits for its worker, so ``wait4`` of the master counts both);
- ``initial``: ``harvester harvest URL`` into a fresh folder, this checkout's provider serving;
- ``incremental``: after 1 % of the files were modified, 0.5 % removed and 0.5 % added, each
  checkout reruns on a fresh copy of its initial folder, which must archive exactly the changes;
- ``crawl``: ``harvester harvest URL/index.html --mode crawl`` into a fresh folder.

Both checkouts are byte-compiled first, as ``python -m bench`` does for this one.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import harvest, provider
from bench.harness import CHILD_USAGE, Report, median, run_child
from tests.servers import HOST, free_port, wait_until_answers
from tests.sites import Manifest

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "checkouts"
TIMEOUT = 900.0
PACKAGES = ("harvester", "server_module", "coop_common")
JOBS = ("index", "list", "initial", "incremental", "crawl")


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float


@dataclass(frozen=True)
class Contender:
    """A checkout (``this`` or ``base``) and its interpreter, its modules byte-compiled."""

    name: str
    checkout: Path
    python: str

    @classmethod
    def of(cls, name: str, checkout: Path) -> Contender:
        python = checkout / ".venv" / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"{checkout}: no .venv; run `make .venv/.installed` there first")
        for package in PACKAGES:
            if (checkout / package).is_dir():
                compileall.compile_dir(checkout / package, quiet=1)
        return cls(name, checkout, str(python))

    def tag(self, job: str, index: int) -> str:
        return f"{job}-{self.name}-{index}"


def _measured(argv: list[str], who: Contender, tag: str) -> tuple[Sample, str]:
    logs = OUT / "logs"
    run = run_child(
        argv, logs / f"{tag}.out", logs / f"{tag}.err", timeout=TIMEOUT, cwd=who.checkout
    )
    return Sample(run.seconds, run.usage.ru_utime + run.usage.ru_stime), run.stdout


def _harvest(who: Contender, url: str, out: Path, *extra: str) -> tuple[Sample, dict]:
    argv = [who.python, "-m", "harvester.cli", "harvest", url, "--out", str(out), "--quiet",
            "--json", *extra]  # fmt: skip
    sample, stdout = _measured(argv, who, out.name)
    return sample, json.loads(stdout.strip().splitlines()[-1])


def _index(who: Contender, site: Path, url: str, tag: str) -> tuple[Sample, Path]:
    index = OUT / f"{tag}.sqlite"
    index.unlink(missing_ok=True)
    argv = [who.python, "-m", "server_module.cli", "index", str(site), "--base-url", url,
            "--index", str(index), "--no-plugins"]  # fmt: skip
    return _measured(argv, who, tag)[0], index


def _list(who: Contender, site: Path, tag: str) -> Sample:
    """Index and serve ``site`` with this checkout, list every identifier, stop: the CPU of
    the serve (its start-up refresh finds nothing changed)."""
    port = free_port()
    url = f"http://{HOST}:{port}"
    index = _index(who, site, url, f"{tag}-index")[1]
    usage = OUT / "logs" / f"{tag}.usage.json"
    argv = [who.python, "-S", str(CHILD_USAGE), str(usage), "--", who.python, "-m",
            "server_module.cli",
            "serve", str(site), "--port", str(port), "--base-url", url, "--index", str(index),
            "--workers", "1", "--threads", "1", "--refresh-interval", "0",
            "--no-plugins"]  # fmt: skip
    with open(OUT / "logs" / f"{tag}.err", "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log, cwd=who.checkout,
                                start_new_session=True)  # fmt: skip
    try:
        wait_until_answers(f"{url}/oai?verb=Identify", proc, 120.0)
        count = provider.harvest(f"{url}/oai", "ListIdentifiers", "oai_dc", 10_000).items
    finally:
        # The serve is the wrapper's one child: stopped alone, its master reaps its worker and
        # exits, and the wrapper writes what wait4 said of it.
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        for child in children:
            os.kill(int(child), signal.SIGTERM)
        if proc.wait(TIMEOUT) != 0 or not children:
            raise RuntimeError(f"{tag}: the serve did not stop cleanly; see its log")
    if count == 0:
        raise RuntimeError(f"{tag}: ListIdentifiers listed nothing")
    measured = json.loads(usage.read_text())
    cpu = measured["usage"]["ru_utime"] + measured["usage"]["ru_stime"]
    return Sample(measured["seconds"], cpu)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench checkouts")
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=4, help="alternating runs per checkout")
    parser.add_argument("--jobs", default=",".join(JOBS), help="a comma-separated subset of "
                        + ", ".join(JOBS))  # fmt: skip
    args = parser.parse_args(argv)
    args.jobs = [job for job in args.jobs.split(",") if job]
    unknown = set(args.jobs) - set(JOBS)
    if unknown:
        parser.error(f"--jobs: unknown {', '.join(sorted(unknown))}; choose from {', '.join(JOBS)}")
    return args


Trial = Callable[[Contender, int], Sample]
Samples = dict[str, dict[str, list[Sample]]]


def _alternate(trials: dict[str, Trial], contenders: list[Contender], runs: int,
               samples: Samples) -> None:  # fmt: skip
    for index in range(runs):
        for job, trial in trials.items():
            for who in contenders if index % 2 == 0 else contenders[::-1]:
                samples.setdefault(job, {}).setdefault(who.name, []).append(trial(who, index))


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    contenders = [Contender.of("this", REPO), Contender.of("base", args.base.resolve())]
    shutil.rmtree(OUT, ignore_errors=True)
    (OUT / "logs").mkdir(parents=True)
    harvest.OUT = OUT
    manifest = harvest.fresh_site("site", args.files)
    site = manifest.root
    samples: Samples = {}
    offline: dict[str, Trial] = {
        "index": lambda who, i: _index(who, site, "http://b.invalid", who.tag("index", i))[0],
        "list": lambda who, i: _list(who, site, who.tag("list", i)),
    }
    _alternate({job: offline[job] for job in args.jobs if job in offline}, contenders,
               args.runs, samples)  # fmt: skip
    with harvest.providing(site, workers=2, threads=4) as serving:
        _harvests(args, contenders, serving, manifest, samples)
    return _report(args, samples)


def _harvests(args: argparse.Namespace, contenders: list[Contender], serving: harvest.Provider,
              manifest: Manifest, samples: Samples) -> None:  # fmt: skip
    url = serving.url
    online: dict[str, Trial] = {
        "initial": lambda who, i: _harvest(who, url, OUT / who.tag("initial", i))[0],
        "crawl": lambda who, i: _harvest(who, f"{url}/index.html", OUT / who.tag("crawl", i),
                                         "--mode", "crawl")[0],
    }  # fmt: skip
    _alternate({job: online[job] for job in args.jobs if job in online}, contenders, args.runs,
               samples)  # fmt: skip
    if "incremental" not in args.jobs:
        return
    for who in contenders:
        _harvest(who, url, OUT / f"before-{who.name}")
    modified, removed = args.files // 100, args.files // 200
    harvest.refresh_index(serving, harvest.change_site(manifest, modified, removed, removed))
    expected = (modified + removed, removed)

    def rerun(who: Contender, index: int) -> Sample:
        folder = OUT / who.tag("incremental", index)
        shutil.copytree(OUT / f"before-{who.name}", folder)
        sample, summary = _harvest(who, url, folder)
        got = (summary.get("fetched"), summary.get("deleted"))
        if got != expected:
            raise RuntimeError(f"{folder.name} archived {got} (fetched, deleted), not {expected}")
        return sample

    _alternate({"incremental": rerun}, contenders, args.runs, samples)


def _report(args: argparse.Namespace, samples: Samples) -> Report:
    report = Report("checkouts", ["job", "this: CPU s", "base: CPU s", "CPU ratio this / base",
                                  "wall ratio this / base"])  # fmt: skip
    for job, by_name in samples.items():
        cpu = {name: median([s.cpu for s in runs]) for name, runs in by_name.items()}
        wall = {name: median([s.wall for s in runs]) for name, runs in by_name.items()}
        report.rows.append([job, cpu["this"], cpu["base"], cpu["this"] / cpu["base"],
                            wall["this"] / wall["base"]])  # fmt: skip
        report.figures[f"{job}_cpu_ratio"] = round(cpu["this"] / cpu["base"], 3)
    report.figures.update(files=args.files, runs=args.runs)
    report.notes = [
        f"base checkout: {args.base}; medians of {args.runs} alternating runs each",
        f"python: {sys.version.split()[0]}; default flags in every command",
    ]
    return report
