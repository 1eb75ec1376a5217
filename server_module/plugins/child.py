"""A tool run as a child process under limits: no shell, time, memory and output bounded.

Tools read files the provider does not control, and such tools have had exploitable bugs
(ExifTool's CVE-2021-22204 ran code from a crafted DjVu file). The child gets an argument
list (never a shell), no standard input, ``/`` as its folder, a small environment (no
``HOME``: ExifTool would read a configuration file from there), its own session (so that a
time-out kills its whole process group), and, set in the child before it runs the tool
(:func:`resource.setrlimit`): an address-space limit, a CPU-time limit, and a file-size
limit, which is also the limit on its output, since its standard output and error are
unnamed files the kernel stops it writing past the limit (``SIGXFSZ``).
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

STDERR_KEPT = 4096  # of a failed tool's standard error, kept with its result


@dataclass(frozen=True, slots=True)
class Limits:
    """What one run of a tool may take."""

    seconds: float = 30.0
    memory_bytes: int = 1 << 30
    output_bytes: int = 1 << 20


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended: the status (see :mod:`~coop_common.analysis`), the exit
    code (None when killed by a signal or never started), its output and its error output."""

    status: str
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    seconds: float


def _environment() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}


def _set_limits(limits: Limits) -> None:  # pragma: no cover - runs in the child
    cpu = math.ceil(limits.seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_bytes, limits.output_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(argv: Sequence[str | bytes], limits: Limits) -> Outcome:
    """Run ``argv`` under ``limits``; never raises for anything the tool does."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd="/",
                env=_environment(),
                start_new_session=True,
                close_fds=True,
                preexec_fn=lambda: _set_limits(limits),
            )
        except OSError as exc:
            return Outcome("failed", None, b"", str(exc).encode(), time.monotonic() - started)
        status = _wait(proc, limits.seconds)
        seconds = time.monotonic() - started
        if status != "timeout" and out.seek(0, os.SEEK_END) >= limits.output_bytes:
            status = "output-limit"  # also for a tool that ignores SIGXFSZ (Python does)
        out.seek(0)
        stdout = out.read(limits.output_bytes)
        err.seek(0)
        stderr = err.read(STDERR_KEPT)
    code = proc.returncode if proc.returncode is not None and proc.returncode >= 0 else None
    return Outcome(status, code, stdout, stderr, seconds)


def _wait(proc: subprocess.Popen[bytes], seconds: float) -> str:
    try:
        code = proc.wait(seconds)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return "timeout"
    _kill_group(proc)  # what the tool left behind in its session
    if code == 0:
        return "ok"
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return "timeout"  # the CPU limit: SIGXCPU at the soft limit, SIGKILL at the hard one
    if code == -signal.SIGXFSZ:
        return "output-limit"
    return "failed"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
