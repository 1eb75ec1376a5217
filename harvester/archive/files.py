"""WARC files on disk: their names while written and after, and durable renames.

A file is written as ``<name>.warc.gz.open`` and renamed to ``<name>.warc.gz`` once complete,
by its writer when it closes it or by crash repair after the writer died. Both renames go
through :func:`rename_new`, which never replaces an existing file, and are made durable with
:func:`fsync_dir`.
"""

from __future__ import annotations

import os
from pathlib import Path

from harvester.exceptions import ArchiveError

WARC_SUFFIX = ".warc.gz"
OPEN_SUFFIX = ".open"


def rename_new(source: Path, target: Path) -> None:
    """Rename without ever replacing an existing file."""
    if target.exists():
        raise ArchiveError(f"cannot rename {source}: {target} already exists")
    source.rename(target)


def fsync_dir(directory: Path) -> None:
    """Make a created, renamed or deleted directory entry durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
