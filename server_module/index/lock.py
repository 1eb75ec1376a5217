"""One provider per index: an advisory lock on ``<index>.owner``, taken before the index is
opened, refreshed or renamed, and held for as long as the provider runs.

``oai-provider serve`` takes it exclusively in the process that starts gunicorn, whose forked
workers inherit it; ``oai-provider index`` takes it exclusively for its run. The application
factory (:func:`server_module.app.create_app`, which every worker of a WSGI server such as
``gunicorn 'server_module:create_app(...)'`` calls) takes it shared, so the workers of one
server hold it together while no ``serve`` or ``index`` can take it. A second provider on the
same index is refused, never allowed to rename or delete what the first one publishes; the
refusal names the process that holds the lock (from ``/proc/locks`` on Linux, else from the
pid the last holder wrote into the file). The kernel releases the lock when the holder
exits, even by SIGKILL, so a stale lock cannot stop a restart.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path
from typing import BinaryIO

from server_module.exceptions import IndexBusy

log = logging.getLogger(__name__)

SUFFIX = ".owner"
PROC_LOCKS = Path("/proc/locks")


class IndexLock:
    """The lock of the index at ``index_path``: ``open()`` takes it or raises
    :class:`IndexBusy`; ``close()`` (or the process's exit) releases it."""

    def __init__(self, index_path: str | os.PathLike[str], *, shared: bool = False) -> None:
        self.index_path = Path(index_path)
        self.path = Path(f"{index_path}{SUFFIX}")
        self.shared = shared
        self._file: BinaryIO | None = None

    def open(self) -> IndexLock:
        handle = self.path.open("a+b")
        try:
            fcntl.flock(handle, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise IndexBusy(self._busy_message()) from None
        handle.truncate(0)  # the last to take it, for systems without /proc/locks
        handle.write(f"{os.getpid()}\n".encode())
        handle.flush()
        self._file = handle
        return self

    def close(self) -> None:
        if self._file is not None:
            self._file.close()  # releases the lock
            self._file = None

    def __enter__(self) -> IndexLock:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _busy_message(self) -> str:
        pids = holders(self.path) or self._written_pid()
        who = ", ".join(f"process {pid}{_command(pid)}" for pid in pids) or "another process"
        return (
            f"the index {self.index_path} is held by {who}: another provider serves it; stop "
            "that one first, or give this one its own index with --index PATH"
        )

    def _written_pid(self) -> list[int]:
        try:
            text = self.path.read_text().strip()
        except OSError:
            return []
        return [int(text)] if text.isdigit() else []


def holders(path: Path) -> list[int]:
    """The pids holding a ``flock`` on ``path``, from ``/proc/locks`` (empty elsewhere)."""
    try:
        inode = path.stat().st_ino
        lines = PROC_LOCKS.read_text().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        fields = line.split()
        mine = len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(f":{inode}")
        if mine and fields[4].isdigit() and int(fields[4]) not in pids:
            pids.append(int(fields[4]))
    return pids


def _command(pid: int) -> str:
    """`` (its command line)``, shortened, or nothing if it cannot be read."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    words = [os.path.basename(os.fsdecode(argv[0]))] + [os.fsdecode(a) for a in argv[1:4] if a]
    return f" ({' '.join(words)[:100]})"
