"""File metadata: what the index records about one version of a file, other than its path.

The MIME type comes from the name alone, through Python's built-in table only, so the same
file gets the same type on every machine; the title is the first ``<title>`` of an HTML file;
the digests (SHA-1 and SHA-256) come from one read of exactly the bytes a ``fstat`` describes,
returned with that stat so the index stores what it actually hashed.
"""

from __future__ import annotations

import functools
import hashlib
import html
import logging
import mimetypes
import os
import re
import stat
from typing import NamedTuple

from coop_common.xmltext import clean

log = logging.getLogger(__name__)

DEFAULT_MIME = "application/octet-stream"
CHUNK_SIZE = 1 << 20
TITLE_SCAN_BYTES = 64 * 1024
TITLE_MAX_CHARS = 500
# What a compressed file is, when its name says only what is inside (``x.tar.gz``).
ENCODING_TYPES = {
    "gzip": "application/gzip",
    "bzip2": "application/x-bzip2",
    "xz": "application/x-xz",
    "compress": "application/x-compress",
    "br": "application/x-brotli",
}

Stat = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode

_TITLE_OPEN = re.compile(rb"<title[^>]*>", re.IGNORECASE)
_TITLE_CLOSE = re.compile(rb"</title>", re.IGNORECASE)


class Version(NamedTuple):
    """A file's content as read now."""

    stat: Stat
    sha1: str
    sha256: str
    head: bytes


@functools.cache
def _mime_table() -> mimetypes.MimeTypes:
    # Only the built-in table, so the same file gets the same type on every machine.
    return mimetypes.MimeTypes(filenames=())


def guess_mime(name: bytes) -> str:
    """The MIME type of a file name, from Python's built-in table only.

    >>> guess_mime(b"a/Index.HTML"), guess_mime(b"x.tar.gz"), guess_mime(b"README")
    ('text/html', 'application/gzip', 'application/octet-stream')
    """
    base = name.rpartition(b"/")[2]
    last = base.rfind(b".")
    if last < 0:
        return DEFAULT_MIME
    # Only the last two suffixes matter (``.tar.gz``): a small cache key for a slow lookup.
    before = base.rfind(b".", 0, last)
    return _mime_for_suffixes(os.fsdecode(base[before + 1 if before >= 0 else last + 1 :]))


@functools.lru_cache(maxsize=4096)
def _mime_for_suffixes(suffixes: str) -> str:
    # "./" keeps a name like "data:x" from being taken for a URL scheme.
    mime, encoding = _mime_table().guess_type(f"./x.{suffixes}", strict=False)
    if encoding is not None:
        return ENCODING_TYPES.get(encoding, DEFAULT_MIME)
    return mime or DEFAULT_MIME


def extract_title(head: bytes) -> str | None:
    """The text of the first ``<title>`` in the first 64 KiB of an HTML file, XML-safe.

    >>> extract_title(b"<html><TITLE lang=en>\\n Caf\\xc3\\xa9 &amp;\\x01 more </title>")
    'Café & more'
    >>> extract_title(b"<p>no title</p>") is None
    True
    """
    head = head[:TITLE_SCAN_BYTES]
    opened = _TITLE_OPEN.search(head)
    if opened is None:
        return None
    closed = _TITLE_CLOSE.search(head, opened.end())
    if closed is None:
        return None
    text = html.unescape(head[opened.end() : closed.start()].decode("utf-8", "replace"))
    text = " ".join(clean(text).split())[:TITLE_MAX_CHARS]
    return text or None


def read_version(path: bytes) -> Version | None:
    """SHA-1 and SHA-256 in one pass, with the stat of what was actually read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            return _digest(fd)
        finally:
            os.close(fd)
    except FileNotFoundError:
        log.debug("%r vanished before it was read", path)
    except OSError as exc:
        log.warning("cannot read %r: %s", path, exc)
    return None


def _digest(fd: int) -> Version | None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # swapped for a fifo or device since the scan
        return None
    sha1 = hashlib.sha1(usedforsecurity=False)
    sha256 = hashlib.sha256()
    head = b""
    # Exactly the bytes this stat describes. A write meanwhile changes ctime, so the next
    # refresh reads the file again.
    remaining = st.st_size
    while remaining > 0 and (chunk := os.read(fd, min(CHUNK_SIZE, remaining))):
        head = head or chunk[:TITLE_SCAN_BYTES]
        sha1.update(chunk)
        sha256.update(chunk)
        remaining -= len(chunk)
    found = (st.st_size - remaining, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return Version(found, sha1.hexdigest(), sha256.hexdigest(), head)
