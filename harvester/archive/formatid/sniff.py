"""Content sniffing: the MIME type a payload's first bytes show, after the WHATWG standard.

A small subset of the WHATWG MIME Sniffing Standard: magic numbers of common binary formats,
the HTML tags of its section 7.1, an XML declaration, and UTF-8 text without the binary bytes
of its section 7.2. A generic finding (ZIP, XML, plain text) is made specific by a known file
extension of the URL (``.docx``, ``.svg``, ``.css``...). The result goes into a DIDL record's
``pres:mimeType`` beside the type the server declared, and stands in for it only where the
server declared none.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from pathlib import PurePosixPath
from urllib.parse import urlsplit

__all__ = ["sniff_mime"]


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),  # an empty archive
    (b"\x1f\x8b\x08", "application/gzip"),
)
# The WHATWG MIME Sniffing Standard, section 7.1; the standard wants a space or ">" after
# each, we also take the other white space that begins attributes in real pages.
_HTML_TAGS = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<!--",
)
_TAG_ENDS = (b" ", b">", b"\t", b"\n", b"\x0c", b"\r")
# Bytes that mark binary data (WHATWG section 7.2); NUL among them.
_BINARY = frozenset([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_SNIFF_SIZE = 1445  # the standard's resource header
_TEXT_SIZE = 4096
# A generic finding made specific by the URL's file extension.
_REFINE: Mapping[str, Mapping[str, str]] = {
    "application/zip": {
        ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ".odt": "application/vnd.oasis.opendocument.text",
        ".ods": "application/vnd.oasis.opendocument.spreadsheet",
        ".epub": "application/epub+zip",
        ".jar": "application/java-archive",
    },
    "application/xml": {".svg": "image/svg+xml", ".rss": "application/rss+xml"},
    "text/plain": {
        ".css": "text/css",
        ".js": "text/javascript",
        ".json": "application/json",
        ".csv": "text/csv",
    },
}

_MAGIC_PREFIXES = tuple(magic for magic, _ in _MAGIC)


def sniff_mime(payload: bytes, url: str) -> str | None:
    """The MIME type the payload's first bytes show, or None if they show none.

    A generic finding (ZIP, XML, plain text) is made specific by a known file extension.

    >>> sniff_mime(b"%PDF-1.7", "http://example.org/a")
    'application/pdf'
    >>> sniff_mime(b"body { color: red }", "http://example.org/site.css")
    'text/css'
    """
    found = _sniff(payload)
    refine = _REFINE.get(found) if found is not None else None
    if refine is None:  # HTML, images, PDF: the URL is not looked at
        return found
    extension = PurePosixPath(urlsplit(url).path).suffix.lower()
    return refine.get(extension, found)


def _sniff(payload: bytes) -> str | None:
    if payload.startswith(_MAGIC_PREFIXES):  # one test for the usual miss
        return next(mime for magic, mime in _MAGIC if payload.startswith(magic))
    if payload.startswith((codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE)):
        return "text/plain"
    head = payload[:_SNIFF_SIZE].removeprefix(codecs.BOM_UTF8).lstrip(b"\t\n\x0c\r ").lower()
    if any(
        head.startswith(tag) and head[len(tag) : len(tag) + 1] in _TAG_ENDS for tag in _HTML_TAGS
    ):
        return "text/html"
    if head.startswith(b"<?xml"):
        return "application/xml"
    return "text/plain" if _is_text(payload) else None


def _is_text(payload: bytes) -> bool:
    """Whether the payload starts as UTF-8 text without binary bytes (and is not empty)."""
    head = payload[:_TEXT_SIZE]
    if not head or not _BINARY.isdisjoint(head):
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(payload) <= _TEXT_SIZE)
    except UnicodeDecodeError:
        return False
    return True
