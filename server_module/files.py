"""The document root's files: the one place that turns a relative path into an open file.

Every read of a site file (serving it, embedding it in a DIDL record) goes through
:func:`open_public`, which refuses hidden components, ``..``, NUL bytes, absolute paths and
anything whose real path leaves the document root, re-checked at open time because a symlink
can change between an index refresh and a request.
"""

from __future__ import annotations

import os
import stat
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO


def is_public_relpath(relpath: bytes) -> bool:
    """True for a plain relative path with no hidden, empty or dot-dot component.

    >>> [is_public_relpath(p) for p in (b"a/b.html", b"a/.git/x", b"../x", b"/etc", b"a\\x00")]
    [True, False, False, False, False]
    """
    if not relpath or relpath.startswith(b"/") or b"\x00" in relpath or b"\\" in relpath:
        return False
    return all(part and not part.startswith(b".") for part in relpath.split(b"/"))


@lru_cache(maxsize=16)
def real_root(docroot: Path) -> bytes:
    """The document root's real path, resolved once per process (it does not move)."""
    return os.path.realpath(os.fsencode(docroot))


def open_public(docroot: Path, relpath: bytes) -> tuple[BinaryIO, os.stat_result] | None:
    """Open a public regular file below ``docroot`` for reading, or return None."""
    if not is_public_relpath(relpath):
        return None
    root = real_root(docroot)
    real = os.path.realpath(os.path.join(root, relpath))
    if not real.startswith(root + b"/"):
        return None
    try:
        handle = open(real, "rb")  # noqa: SIM115 - the caller owns and closes it
    except OSError:
        return None
    info = os.fstat(handle.fileno())
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        return None
    return handle, info
