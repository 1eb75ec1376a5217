"""Runs the plugins on what the index's committed rows still lack, after a refresh has
committed them, and never in a request: so a refresh, and a provider's start, list the files
at once, however slow the tools.

A pass (:func:`analyse_pending`) holds ``<index>.plugins.lock`` (flock: one pass at a time
across a server's processes), finds what is due (:mod:`server_module.plugins.survey`) and
runs it in batches of ``BATCH_FILES`` file versions, within the runner's CPU budget; each
batch's results are written in one short transaction that moves the files' datestamps
(:func:`~server_module.index.writer.write_analyses`). A pass cut short (the process killed)
leaves the rest due: the next pass resumes it. :class:`Analyser` runs passes in a daemon
thread of its own, started per process on first use (threads do not survive a fork).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from server_module.index.writer import Clock, finish_analyses, write_analyses
from server_module.plugins.runner import PluginRunner
from server_module.plugins.survey import complete, labels_key, pending, work

log = logging.getLogger(__name__)

BATCH_FILES = 200  # file versions a batch: one run of a batching tool (fido, file)
LOCK_SUFFIX = b".plugins.lock"


@dataclass(frozen=True)
class Pass:
    """What a pass needs of the index: a write connection, its lock file, its clock."""

    connect: Callable[[], sqlite3.Connection]
    lock_path: Path
    runner: PluginRunner
    docroot: bytes
    clock: Clock

    @property
    def survey(self) -> tuple[PluginRunner, bytes]:
        return self.runner, self.docroot


def analyse_pending(job: Pass, stop: threading.Event | None = None) -> int:
    """Run every analysis due, batch by batch, until none is (or ``stop`` is set); the
    number of results written."""
    written = 0
    tried: set[tuple[str, str]] = set()
    key = labels_key(job.runner)
    with _locked(job.lock_path), closing(job.connect()) as conn:
        while not (stop and stop.is_set()) and not complete(conn, job.runner):
            due = pending(conn, *job.survey, tried)
            if not due:
                if finish_analyses(conn, key, lambda: not pending(conn, *job.survey, tried)):
                    break
                continue  # a refresh brought files in meanwhile
            for start in range(0, len(due), BATCH_FILES):
                if stop and stop.is_set():
                    break
                batch = due[start : start + BATCH_FILES]
                tried.update((d.subject.sha256, p.label) for d in batch for p in d.plugins)
                started = time.monotonic()
                analyses = job.runner.analyse(work(batch))
                write_analyses(conn, analyses, job.clock)
                written += len(analyses)
                log.info(
                    "plugins: %d results for %d files in %.1f s; %d files to go",
                    len(analyses),
                    len(batch),
                    time.monotonic() - started,
                    len(due) - start - len(batch),
                )
    return written


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class Analyser:
    """Passes in a daemon thread: :meth:`later` asks for one; :meth:`wait` waits until none is
    asked for or running (tests); :meth:`close` stops after the batch under way."""

    def __init__(self, job: Pass) -> None:
        self.job = job
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def later(self) -> None:
        """Have a pass run soon in this process's thread (started if need be)."""
        with self._lock:
            self._idle.clear()
            self._wake.set()
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._pid, self._stop = os.getpid(), threading.Event()
                self._thread = threading.Thread(
                    target=self._run, args=(self._stop,), name="index-plugins", daemon=True
                )
                self._thread.start()

    def wait(self, timeout: float) -> bool:
        """Wait until no pass is asked for or running; False after ``timeout`` seconds."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stop.set()
            self._wake.set()
            thread = self._thread if self._pid == os.getpid() else None
            self._thread = None
        if thread is not None:
            thread.join(timeout)
        self._idle.set()

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if stop.is_set():
                return
            try:
                analyse_pending(self.job, stop)
            except Exception:  # a failed pass must not kill the thread: the next one retries
                log.exception("the plugins' pass over %s failed", self.job.lock_path)
            with self._lock:
                if not self._wake.is_set():
                    self._idle.set()
