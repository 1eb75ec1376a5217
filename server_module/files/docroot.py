"""The document root's files: the one place that turns a relative path into an open file.

Every read of a site file (serving it, embedding it in a DIDL record) goes through
:func:`open_public`, which applies the scan's public-path rules
(:mod:`server_module.index.publicpaths`) at the moment it opens, because a symlink can change
between an index refresh and a request:

1. the relative path must have only published components (no empty, hidden or excluded one,
   so no ``..``, no absolute path, no NUL byte or backslash);
2. its real path must lie inside the document root or an allowed outside folder, with no
   hidden or excluded component below that folder;
3. that real path is then opened one component at a time from the folder, each with
   ``O_NOFOLLOW``: a component swapped for a symlink since step 2 fails the open instead of
   being followed, so the file opened is the file checked;
4. what was opened must be a regular file (a fifo swapped in is not waited on).

A path with no symlink in it is its own real path, so it is first opened as in step 3 from
the root; only when that fails (a symlink on the way, or the file gone) is it resolved.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from server_module.index.publicpaths import DEFAULT_EXCLUDES, PublicPaths, public_paths

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_public(
    docroot: Path,
    relpath: bytes,
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES,
    allow_outside: tuple[Path, ...] = (),
) -> tuple[BinaryIO, os.stat_result] | None:
    """Open a public regular file of ``docroot`` for reading, or return None (steps above)."""
    rules = public_paths(docroot, tuple(exclude), tuple(allow_outside))
    if not rules.relpath_ok(relpath):
        return None
    try:
        # Most paths hold no symlink: then the path is its own real path, below the root,
        # and step 3 alone, from the root, opens exactly what steps 2 and 3 would.
        fd = _open_beneath(rules.root, relpath)
    except OSError:  # a symlink on the way (or gone, or unreadable): resolve it first
        opened = _open_resolved(rules, relpath)
        if opened is None:
            return None
        fd = opened
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb"), info


def _open_resolved(rules: PublicPaths, relpath: bytes) -> int | None:
    """Steps 2 and 3 for a path through a symlink: the fd, or None when not public."""
    real = os.path.realpath(os.path.join(rules.root, relpath))
    base = rules.base_of(real)
    if base is None:
        return None
    try:
        return _open_beneath(base, real[len(base) :].lstrip(b"/"))
    except OSError:  # gone, unreadable, or a component swapped for a symlink meanwhile
        return None


def _open_beneath(base: bytes, inner: bytes) -> int:
    """Open ``base/inner`` following no symlink below ``base``; the caller closes the fd."""
    *folders, name = inner.split(b"/")
    dir_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folders:
            inner_fd = os.open(folder, _DIR_FLAGS, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = inner_fd
        return os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
