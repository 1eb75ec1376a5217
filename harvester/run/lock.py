"""The collection lock: one harvest at a time writes a collection.

Two runs on one ``--out`` would list and fetch everything twice and capture it twice. A run
holds an exclusive ``flock(2)`` on ``OUT/harvest.lock`` from its start to its end, with its
pid written in the file, so a refused run can say which process holds the collection. The
kernel releases the lock when its process ends however it ends, SIGKILL included: a crashed
run never leaves a stale lock behind (a stale pid in the file is overwritten by the next
holder). The file itself is never removed, since a removed lock file races with its lockers.

The workers of a shared job (a ``postgresql://`` state) may share one ``--out``: each holds
its own lock, ``harvest-<worker id>.lock``, so one worker id runs once per folder, and the
state's leases, not this lock, keep the workers apart.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from coop_common.component import Component
from harvester.exceptions import CollectionInUse

LOCK_NAME = "harvest.lock"


class CollectionLock(Component):
    """``open()`` takes the lock or raises :class:`CollectionInUse`; ``close()`` frees it."""

    def __init__(self, collection: Path, name: str = LOCK_NAME) -> None:
        self.collection = collection
        self.path = collection / name
        self._fd: int | None = None

    def open(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise CollectionInUse(
                f"{self.collection} is in use by process {holder} (lock {self.path}); "
                "wait for that harvest to end"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the last descriptor releases the flock


def _holder(fd: int) -> str:
    """The pid the holder wrote, or a phrase when it has not written it yet."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "(pid not yet written)"
