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

import requests
from lxml import etree

from bench import harvest
from bench.harness import CHILD_USAGE, Report, median, run_child
from tests.servers import HOST, free_port, wait_until_answers
from tests.sites import Manifest

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "checkouts"
TIMEOUT = 900.0
PACKAGES = ("harvester", "server_module", "coop_common")
JOBS = ("index", "list", "initial", "incremental", "crawl")
OAI = "{http://www.openarchives.org/OAI/2.0/}"


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float


def _python(checkout: Path) -> str:
    python = checkout / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{checkout}: no .venv; run `make .venv/.installed` there first")
    for package in PACKAGES:
        if (checkout / package).is_dir():
            compileall.compile_dir(checkout / package, quiet=1)
    return str(python)


def _measured(argv: list[str], checkout: Path, tag: str) -> tuple[Sample, str]:
    logs = OUT / "logs"
    run = run_child(argv, logs / f"{tag}.out", logs / f"{tag}.err", timeout=TIMEOUT, cwd=checkout)
    return Sample(run.seconds, run.usage.ru_utime + run.usage.ru_stime), run.stdout


def _harvest(python: str, checkout: Path, url: str, out: Path, *extra: str) -> tuple[Sample, dict]:
    argv = [python, "-m", "harvester.cli", "harvest", url, "--out", str(out), "--quiet", "--json",
            *extra]  # fmt: skip
    sample, stdout = _measured(argv, checkout, out.name)
    return sample, json.loads(stdout.strip().splitlines()[-1])


def _index(python: str, checkout: Path, site: Path, url: str, tag: str) -> tuple[Sample, Path]:
    index = OUT / f"{tag}.sqlite"
    index.unlink(missing_ok=True)
    argv = [python, "-m", "server_module.cli", "index", str(site), "--base-url", url,
            "--index", str(index), "--no-plugins"]  # fmt: skip
    return _measured(argv, checkout, tag)[0], index


def _list(python: str, checkout: Path, site: Path, tag: str) -> Sample:
    """Index and serve ``site`` with this checkout, list every identifier, stop: the CPU of
    the serve (its start-up refresh finds nothing changed)."""
    port = free_port()
    url = f"http://{HOST}:{port}"
    index = _index(python, checkout, site, url, f"{tag}-index")[1]
    usage = OUT / "logs" / f"{tag}.usage.json"
    argv = [python, "-S", str(CHILD_USAGE), str(usage), "--", python, "-m", "server_module.cli",
            "serve", str(site), "--port", str(port), "--base-url", url, "--index", str(index),
            "--workers", "1", "--threads", "1", "--refresh-interval", "0",
            "--no-plugins"]  # fmt: skip
    with open(OUT / "logs" / f"{tag}.err", "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log, cwd=checkout, start_new_session=True)
    try:
        wait_until_answers(f"{url}/oai?verb=Identify", proc, 120.0)
        count = _list_identifiers(f"{url}/oai")
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


def _list_identifiers(endpoint: str) -> int:
    count, params = 0, {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"}
    with requests.Session() as session:
        while True:
            tree = etree.fromstring(session.get(endpoint, params=params, timeout=60).content)
            count += sum(1 for _ in tree.iterfind(f".//{OAI}header"))
            token = tree.findtext(f".//{OAI}resumptionToken")
            if not token:
                return count
            params = {"verb": "ListIdentifiers", "resumptionToken": token}


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


Trial = Callable[[str, Path, int], Sample]
Samples = dict[str, dict[str, list[Sample]]]


def _alternate(trials: dict[str, Trial], checkouts: dict[str, Path], runs: int,
               samples: Samples) -> None:  # fmt: skip
    pythons = {name: _python(checkout) for name, checkout in checkouts.items()}
    for index in range(runs):
        order = list(checkouts) if index % 2 == 0 else list(checkouts)[::-1]
        for job, trial in trials.items():
            for name in order:
                sample = trial(pythons[name], checkouts[name], index)
                samples.setdefault(job, {}).setdefault(name, []).append(sample)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    checkouts = {"this": REPO, "base": args.base.resolve()}
    shutil.rmtree(OUT, ignore_errors=True)
    (OUT / "logs").mkdir(parents=True)
    harvest.OUT = OUT
    manifest = harvest.fresh_site("site", args.files)
    site = manifest.root
    samples: Samples = {}
    tags = {checkout: name for name, checkout in checkouts.items()}

    def tag(checkout: Path, job: str, index: int) -> str:
        return f"{job}-{tags[checkout]}-{index}"

    offline: dict[str, Trial] = {
        "index": lambda py, co, i: _index(py, co, site, "http://b.invalid", tag(co, "index", i))[0],
        "list": lambda py, co, i: _list(py, co, site, tag(co, "list", i)),
    }
    _alternate({job: offline[job] for job in args.jobs if job in offline}, checkouts, args.runs,
               samples)  # fmt: skip
    with harvest.providing(site, workers=2, threads=4) as provider:
        _harvests(args, checkouts, provider, manifest, samples, tag)
    return _report(args, samples)


def _harvests(args: argparse.Namespace, checkouts: dict[str, Path], provider: harvest.Provider,
              manifest: Manifest, samples: Samples, tag: Callable[[Path, str, int], str],
              ) -> None:  # fmt: skip
    online: dict[str, Trial] = {
        "initial": lambda py, co, i: _harvest(py, co, provider.url, OUT / tag(co, "initial", i))[0],
        "crawl": lambda py, co, i: _harvest(py, co, f"{provider.url}/index.html",
                                            OUT / tag(co, "crawl", i), "--mode", "crawl")[0],
    }  # fmt: skip
    _alternate({job: online[job] for job in args.jobs if job in online}, checkouts, args.runs,
               samples)  # fmt: skip
    if "incremental" not in args.jobs:
        return
    for name, checkout in checkouts.items():
        _harvest(_python(checkout), checkout, provider.url, OUT / f"before-{name}")
    modified, removed = args.files // 100, args.files // 200
    harvest.refresh_index(provider, harvest.change_site(manifest, modified, removed, removed))
    expected = (modified + removed, removed)

    def rerun(python: str, checkout: Path, index: int) -> Sample:
        folder = OUT / tag(checkout, "incremental", index)
        shutil.copytree(OUT / f"before-{'this' if checkout == REPO else 'base'}", folder)
        sample, summary = _harvest(python, checkout, provider.url, folder)
        got = (summary.get("fetched"), summary.get("deleted"))
        if got != expected:
            raise RuntimeError(f"{folder.name} archived {got} (fetched, deleted), not {expected}")
        return sample

    _alternate({"incremental": rerun}, checkouts, args.runs, samples)


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
