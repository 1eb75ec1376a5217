"""Progress of a run: a rich progress bar on a terminal, a log line every few seconds elsewhere."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from harvester.summary import Summary

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

log = logging.getLogger(__name__)


class ProgressReporter:
    """Callable as the harvest's progress hook; use as a context manager around the run."""

    def __init__(
        self,
        *,
        quiet: bool = False,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self.interval = interval
        self.clock = clock
        self.tty = sys.stderr.isatty() and not quiet
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._last: float | None = None  # when the last line was logged; None: never

    def __enter__(self) -> ProgressReporter:
        if self.tty:
            # rich only for a bar: a quiet or logged run does without its import (40 ms)
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.fields[status]}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeRemainingColumn(),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("harvest", total=None, status="starting", rate="")
            self._started = self.clock()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, summary: Summary, remaining: int) -> None:
        done = summary.finished
        crawl = summary.mode == "crawl"  # nothing is listed: what is left is the queue
        status = (
            f"crawled {done} queued {remaining}"
            if crawl
            else f"listed {summary.listed} fetched {done} left {remaining}"
        )
        if self._bar is not None and self._task is not None:
            elapsed = max(self.clock() - self._started, 1e-6)
            rate = f"{done / elapsed:,.0f} res/s {summary.bytes / elapsed / 1e6:,.1f} MB/s"
            self._bar.update(
                self._task,
                completed=done,
                total=done + remaining,
                status="crawling" if crawl else f"listed {summary.listed}",
                rate=rate,
            )
            return
        now = self.clock()
        if self.quiet:
            return
        if self._last is None or now - self._last >= self.interval:
            self._last = now
            log.info("%s, %d bytes", status, summary.bytes)


class ByteProgress:
    """Progress through a known number of bytes (``verify``, ``wacz``): a rich bar on a
    terminal, a log line every ``interval`` seconds elsewhere. Call with bytes just done."""

    def __init__(
        self,
        what: str,
        total: int,
        *,
        quiet: bool = False,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.total, self.done = what, total, 0
        self.quiet, self.interval, self.clock = quiet, interval, clock
        self.tty = sys.stderr.isatty() and not quiet
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._last = clock()

    def __enter__(self) -> ByteProgress:
        if self.tty:
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

            self._bar = Progress(
                f"{self.what} ",
                BarColumn(),
                DownloadColumn(),
                TimeRemainingColumn(),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, nbytes: int) -> None:
        self.done += nbytes
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done)
            return
        now = self.clock()
        if not self.quiet and now - self._last >= self.interval:
            self._last = now
            log.info("%s: %d of %d bytes", self.what, self.done, self.total)
