"""Keeps the file index current: a daemon thread that refreshes it every ``interval`` seconds.

Under gunicorn every worker process runs one; the index's own file lock lets only one refresh
run at a time, and the others skip their turn. The thread is started per process on first use,
because threads do not survive the fork from a preloading master.
"""

from __future__ import annotations

import logging
import os
import threading

from server_module.index import FileIndex

log = logging.getLogger(__name__)


class Refresher:
    def __init__(self, index: FileIndex, interval: float) -> None:
        self.index = index
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def open(self) -> None:
        """Start the thread in this process, once; a no-op when the interval is 0."""
        if self.interval <= 0 or self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="index-refresh", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._pid == os.getpid():
            self._thread.join(timeout=5)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                stats = self.index.refresh(blocking=False)
            except Exception:  # a failed refresh must not kill the thread: log, retry later
                log.exception("index refresh failed; the next one is in %ss", self.interval)
                continue
            if stats is None:
                log.debug("another process is refreshing the index; skipped")
