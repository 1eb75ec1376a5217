"""WARC files on disk: their names while written and after, and durable renames.

A file is written as ``<name>.warc.gz.open`` and renamed to ``<name>.warc.gz`` once complete,
by its writer when it closes it or by crash repair after the writer died. Both renames go
through :func:`rename_new`, which never replaces an existing file, and are made durable with
:func:`fsync_dir`.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from pathlib import Path

from harvester.exceptions import ArchiveError

WARC_SUFFIX = ".warc.gz"
OPEN_SUFFIX = ".open"
_AT_FDCWD = -100
_NOREPLACE = 1  # RENAME_NOREPLACE, linux/fs.h


def rename_new(source: Path, target: Path) -> None:
    """Rename without ever replacing an existing file, in one step: Linux's ``renameat2`` with
    ``RENAME_NOREPLACE``, so no other writer can create ``target`` between a check and the
    rename. Where the call or the filesystem lacks it, a check, then the rename."""
    try:
        _rename_noreplace(source, target)
    except FileExistsError as exc:
        raise ArchiveError(f"cannot rename {source}: {target} already exists") from exc
    except OSError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise ArchiveError(f"cannot rename {source} to {target}: {exc.strerror}") from exc
        if target.exists():
            raise ArchiveError(f"cannot rename {source}: {target} already exists") from None
        source.rename(target)


def _rename_noreplace(source: Path, target: Path) -> None:
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if renameat2(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), _NOREPLACE):
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(source), None, str(target))


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def fsync_dir(directory: Path) -> None:
    """Make a created, renamed or deleted directory entry durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
