"""Keeps the file index current: a daemon thread that refreshes it every ``interval`` seconds,
and, with ``watch``, within about two seconds of a change under the document root.

A watched change (:mod:`server_module.index.watcher`) wakes the thread, which waits until changes
have stopped for ``QUIET_S`` (at most ``SETTLE_S`` after the first), so that a burst of
changes, such as a deployment copying a tree, makes one refresh. The interval remains the
fallback, for file systems or limits where the watch does not work.

Under gunicorn every worker process runs one; the index's own file lock lets only one refresh
run at a time, and the others skip their turn (a watched change whose refresh was skipped is
tried again shortly, since the refresh under way may have passed the changed file). The
thread and the watch are started per process on first use, because threads do not survive
the fork from a preloading master; the watch begins with a refresh, for what changed before.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from server_module.index.fileindex import INDEX_SUFFIXES, FileIndex
from server_module.index.watcher import Watcher

log = logging.getLogger(__name__)

QUIET_S = 0.3  # a burst of changes has ended when none came for this long
SETTLE_S = 1.5  # but a refresh follows the first change of a burst after this long at most


class Refresher:
    def __init__(self, index: FileIndex, interval: float, *, watch: bool = True) -> None:
        self.index = index
        self.interval = interval
        self.watch = watch
        self._stop = threading.Event()
        self._changed = threading.Event()
        self._thread: threading.Thread | None = None
        self._watcher: Watcher | None = None
        self._pid = 0

    def open(self) -> None:
        """Start the thread (and the watch) in this process, once; a no-op when the interval
        is 0, which turns automatic refreshing off altogether."""
        if self.interval <= 0 or self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._stop.clear()
        if self.watch:
            watcher = Watcher(self.index.docroot, self._changed.set, self._index_files())
            if watcher.open():
                self._watcher = watcher
                self._changed.set()
        self._thread = threading.Thread(target=self._run, name="index-refresh", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the watch and the thread, and wait for both (in the process that started them)."""
        self._stop.set()
        self._changed.set()  # wakes the thread
        if self._pid != os.getpid():
            return
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    def _index_files(self) -> list[str]:
        paths = {os.path.abspath(self.index.path), os.path.realpath(self.index.path)}
        return [path + os.fsdecode(suffix) for path in paths for suffix in INDEX_SUFFIXES]

    def _run(self) -> None:
        while not self._stop.is_set():
            changed = self._changed.wait(self.interval)
            if changed:
                self._settle()
            if self._stop.is_set():
                return
            if self._skipped() and changed:
                self._changed.set()  # skipped: try again once the other refresh may be done

    def _settle(self) -> None:
        """Wait until changes stop for ``QUIET_S``, or ``SETTLE_S`` after the first."""
        deadline = time.monotonic() + SETTLE_S
        self._changed.clear()
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or not self._changed.wait(min(QUIET_S, left)):
                return
            self._changed.clear()

    def _skipped(self) -> bool:
        """Refresh unless another process is at it; True when skipped for that reason."""
        try:
            stats = self.index.refresh(blocking=False, analyse="later")
        except Exception:  # a failed refresh must not kill the thread: log, retry later
            log.exception("index refresh failed; the next one is in %ss", self.interval)
            return False
        if stats is None:
            log.debug("another process is refreshing the index; skipped")
        return stats is None
