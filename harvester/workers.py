"""``--workers N``: N worker processes of one job on this machine, each the same ``harvester
harvest`` command with its own ``--worker`` id (``HOSTNAME-w1`` ... ``HOSTNAME-wN``), sharing
the ``postgresql://`` state and the ``--out`` folder; the exit code is the worst of theirs.

SIGINT or SIGTERM to the parent is passed on to every worker, which each end as a killed
harvest does: the next start of the same command resumes the job.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from types import FrameType


def worker_ids(count: int, base: str | None = None) -> list[str]:
    """The ids of ``count`` local workers.

    >>> worker_ids(2, "box")
    ['box-w1', 'box-w2']
    """
    base = base or socket.gethostname().split(".")[0]
    return [f"{base}-w{i}" for i in range(1, count + 1)]


def run_workers(argv: list[str], count: int, base: str | None = None) -> int:
    """Run ``harvester`` with ``argv`` (a ``harvest`` command line) as ``count`` workers."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "harvester.cli", *argv, "--workers", "1", "--worker", wid]
        )
        for wid in worker_ids(count, base)
    ]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        codes = [proc.wait() for proc in procs]
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return max(codes, key=abs)
