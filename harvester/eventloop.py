"""The event loop a run's fetching goes through: uvloop's (libuv) where it is installed.

A ``get`` harvest makes one request per file; on the benchmark's site the standard loop's
Python (its selector, transports, handles and timers) was a tenth of the harvester's CPU per
file. uvloop runs the same coroutines, transports and timeouts in C. Without it the standard
loop runs them unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["loop_factory", "run"]


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker, or None (the standard loop) when uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop  # type: ignore[no-any-return]


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on a new loop from :func:`loop_factory`."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
