"""``--workers N``: N worker processes of one job on this machine, each the same ``harvester
harvest`` command with its own ``--worker`` id (``HOSTNAME-w1`` ... ``HOSTNAME-wN``), sharing
the ``postgresql://`` state and the ``--out`` folder; the exit code is the worst of theirs.

Each worker's command line is built from the parameters the parent was given
(:func:`command_line`), not from ``sys.argv``. SIGINT or SIGTERM to the parent is passed on to
every worker, which each end as an interrupted harvest does (exit 130): the next start of the
same command resumes the job. A worker ended by a signal (SIGKILL included) counts as
interrupted too (:func:`worst`), never as the raw ``-N`` wait status.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from types import FrameType
from typing import Any

import click

from coop_common.exitcode import ExitCode

OWN = ("workers", "worker")  # the parameters the parent sets for each worker


def worker_ids(count: int, base: str | None = None) -> list[str]:
    """The ids of ``count`` local workers.

    >>> worker_ids(2, "box")
    ['box-w1', 'box-w2']
    """
    base = base or socket.gethostname().split(".")[0]
    return [f"{base}-w{i}" for i in range(1, count + 1)]


def command_line(command: click.Command, params: Mapping[str, Any]) -> list[str]:
    """The arguments that give ``command`` the values ``params`` (as click parsed them), but
    those of :data:`OWN`; unset options (None, empty) are left out.

    >>> @click.command()
    ... @click.argument("url")
    ... @click.option("--seed", "seeds", multiple=True)
    ... @click.option("--quiet", is_flag=True, default=None)
    ... @click.option("--workers", type=int)
    ... def c(url, seeds, quiet, workers): ...
    >>> command_line(c, {"url": "http://a/", "seeds": ("x", "y"), "quiet": True, "workers": 3})
    ['http://a/', '--seed', 'x', '--seed', 'y', '--quiet']
    """
    args: list[str] = []
    for param in command.params:
        value = params.get(param.name or "")
        if param.name in OWN or value is None or value == ():
            continue
        if isinstance(param, click.Argument):
            args += [str(v) for v in value] if param.multiple else [str(value)]
        elif isinstance(param, click.Option) and param.is_flag:
            flags = param.opts if value else param.secondary_opts
            args += flags[:1]
        elif isinstance(param, click.Option):
            for one in value if param.multiple else (value,):
                args += [param.opts[0], str(one)]
    return args


def worst(codes: list[int]) -> int:
    """The exit code of the job: a worker ended by a signal (a negative wait status) is
    interrupted; otherwise the largest code.

    >>> worst([0, 3]), worst([0, -9]), worst([130, 0])
    (3, 130, 130)
    """
    return max((int(ExitCode.INTERRUPTED) if code < 0 else code for code in codes), default=0)


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
    return worst(codes)
