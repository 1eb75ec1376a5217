"""The benchmark report and the side-by-side timing helpers every benchmark uses."""

from __future__ import annotations

import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Report:
    """One benchmark's outcome: a table for people and headline figures for machines."""

    name: str
    columns: list[str]
    rows: list[list[object]] = field(default_factory=list)
    figures: dict[str, float | int | str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        """The rows as a Markdown table, ready for bench/README.md."""
        cells = [[_fmt(c) for c in row] for row in self.rows]
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines)

    def json_line(self) -> str:
        return json.dumps({"bench": self.name, **self.figures}, sort_keys=True)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def timed(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(
    contenders: dict[str, Callable[[], object]], repeats: int = 3
) -> dict[str, list[float]]:
    """Run each contender ``repeats`` times, interleaved (A B A B ...), and keep every time."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            times[name].append(timed(fn))
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


@dataclass(frozen=True)
class ChildRun:
    """A finished child process: wall seconds, its resource usage and what it printed."""

    seconds: float
    usage: resource.struct_rusage
    stdout: str


def run_child(
    argv: list[str], out: Path, err: Path, *, timeout: float, ok: Iterable[int] = (0,), cwd: Path
) -> ChildRun:
    """Run a command to its end (killed after ``timeout``), stdout and stderr to files.

    The wall seconds and the usage (CPU seconds, peak RSS) are the command's own, as
    ``/usr/bin/time -v`` reports them: it is forked by the small ``childusage.py``, not by this
    process, whose RSS Linux would otherwise count as the command's peak.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    report = out.with_name(out.name + ".usage.json")
    wrapped = [sys.executable, "-S", str(CHILD_USAGE), str(report), "--", *argv]
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(wrapped, stdout=stdout, stderr=stderr, cwd=cwd,
                                start_new_session=True)  # fmt: skip
        watchdog = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        watchdog.start()
        try:
            code = proc.wait()
        finally:
            watchdog.cancel()
    if code not in ok:
        raise RuntimeError(f"{argv[0]} {argv[1:3]} exited with {code}; see {err}")
    measured = json.loads(report.read_text())
    fields = measured["usage"]
    usage = resource.struct_rusage([fields[name] for name in _RUSAGE_FIELDS])
    return ChildRun(measured["seconds"], usage, out.read_text())


CHILD_USAGE = Path(__file__).with_name("childusage.py")
_RUSAGE_FIELDS = (
    "ru_utime", "ru_stime", "ru_maxrss", "ru_ixrss", "ru_idrss", "ru_isrss", "ru_minflt",
    "ru_majflt", "ru_nswap", "ru_inblock", "ru_oublock", "ru_msgsnd", "ru_msgrcv",
    "ru_nsignals", "ru_nvcsw", "ru_nivcsw",
)  # fmt: skip
