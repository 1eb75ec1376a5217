"""What a process the harvester forks does first: the fetching shares
(:mod:`harvester.listed.shards`) and the crawl's archiving process
(:mod:`harvester.crawl.archivist`).

A child never returns into the parent's stack: it ends with ``os._exit``, so neither the
parent's finalisers nor its buffered output run twice. It writes to the standard streams
directly, not through a progress bar's (rich's) redirection, whose lock a thread of the
parent may have held at the fork, and it dies with its parent (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def fork() -> tuple[int, int]:
    """``os.fork`` with the standard streams flushed first (else the child would write the
    parent's buffered output again); (the child's pid or 0, the parent's pid)."""
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    return os.fork(), parent


def become_child(parent: int, *, interrupt: Callable[..., Any] | int = signal.SIG_DFL) -> None:
    """The first steps of a forked child of ``parent``; ``interrupt`` is its SIGINT handler."""
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    signal.set_wakeup_fd(-1)  # an event loop's of the parent is not ours
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent)


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when ``parent`` dies (elsewhere, nothing)."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the call
        os._exit(1)
