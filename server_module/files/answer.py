"""The answer to a GET or HEAD of one indexed file, shared by the Flask view and the fast path.

:func:`answer_file` opens the file through :func:`server_module.files.docroot.open_public` and
chooses the status and headers: 200 with exactly the headers the ``http_header`` format
reports (or, when the file changed since the last refresh, headers that describe what is on
disk now), or 304 with its ETag when the request's conditions say the client's copy is
current (RFC 9110 §13.2.2: If-None-Match wins over If-Modified-Since), or for a ``Range``
request 206 with the part, or 416, as nginx answers (:mod:`server_module.files.byterange`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any, BinaryIO, NamedTuple
from urllib.parse import unquote_to_bytes

from werkzeug.http import parse_date, parse_etags

from server_module.files.byterange import (
    Piece,
    Unsatisfiable,
    if_range_holds,
    multipart,
    requested_ranges,
)
from server_module.files.docroot import open_public
from server_module.files.headers import file_headers, http_date
from server_module.records import FileRecord
from server_module.repository import Repository

Headers = list[tuple[str, str]]
# What a 304 carries: its ETag. (werkzeug drops Last-Modified from a 304 as an entity header,
# so the Flask view never sent it there; the fast path sends what the view sends.)
VALIDATORS = ("ETag",)
_RANGED = ("Content-Type", "Content-Length", "Accept-Ranges")  # what a 206 says anew (or not)


class FileAnswer(NamedTuple):
    """A 200 or 206 (``handle`` open for the body; the caller closes it), or a 304 or 416
    (``handle`` None)."""

    status: int
    headers: Headers
    handle: BinaryIO | None
    size: int  # the bytes of the body: the file's size when opened, or the ranges'
    pieces: tuple[Piece, ...] = ()  # a 206's body; none: the whole file

    def body(self) -> FileBody:
        """The body's bytes, for a WSGI server to send and then close."""
        if self.handle is None:
            raise ValueError(f"a {self.status} answer has no body to send")
        return FileBody(self.handle, self.pieces or ((0, self.size),))


class FileBody:
    """A body of bytes and spans of a file, the file read a chunk at a time; ``close()``
    (which a WSGI server calls, PEP 3333) closes the file, even when nothing was read (HEAD)."""

    def __init__(self, handle: BinaryIO, pieces: tuple[Piece, ...], chunk: int = 64 * 1024) -> None:
        self.handle, self.pieces, self.chunk = handle, pieces, chunk

    def __iter__(self) -> Iterator[bytes]:
        for piece in self.pieces:
            if isinstance(piece, bytes):
                yield piece
                continue
            first, left = piece
            self.handle.seek(first)
            while left > 0 and (data := self.handle.read(min(self.chunk, left))):
                left -= len(data)
                yield data

    def read_all(self) -> bytes:
        with self.handle:
            return b"".join(self)

    def close(self) -> None:
        self.handle.close()


def request_relpath(environ: dict[str, Any]) -> bytes:
    """The path as the client sent it, percent-decoded exactly once, as bytes.

    From the raw request line where the server gives it (gunicorn and werkzeug set
    ``RAW_URI``): werkzeug's own PATH_INFO has already turned bytes that are not UTF-8 into
    replacement characters. Else PATH_INFO, which PEP 3333 carries as latin-1.
    """
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        path = unquote_to_bytes(raw.split("?", 1)[0].split("#", 1)[0])
        prefix = environ.get("SCRIPT_NAME", "").encode("latin-1")
        if prefix and path.startswith(prefix):
            path = path[len(prefix) :]
    else:
        path = environ.get("PATH_INFO", "").encode("latin-1", "replace")
    return path.lstrip(b"/")


def answer_file(repo: Repository, record: FileRecord, environ: dict[str, Any]) -> FileAnswer | None:
    """The answer for an indexed, live file; None when it is not public now (a 404)."""
    ctx = repo.context
    opened = open_public(ctx.docroot, record.relpath, ctx.exclude, ctx.allow_outside)
    if opened is None:
        return None
    handle, info = opened
    fresh = info.st_size == record.size and info.st_mtime_ns == record.mtime_ns
    headers = file_headers(record) if fresh else live_headers(record, info)
    if not_modified(headers, environ):
        handle.close()
        return FileAnswer(304, [(k, v) for k, v in headers if k in VALIDATORS], None, 0)
    return ranged(FileAnswer(200, headers, handle, info.st_size), environ)


def ranged(whole: FileAnswer, environ: dict[str, Any]) -> FileAnswer:
    """The 200 answer, or the part of it a ``Range`` request asks for (206, or 416)."""
    fields = dict(whole.headers)
    if not if_range_holds(environ.get("HTTP_IF_RANGE"), fields["ETag"], fields["Last-Modified"]):
        return whole
    try:
        spans = requested_ranges(environ.get("HTTP_RANGE"), whole.size)
    except Unsatisfiable:
        if whole.handle is not None:
            whole.handle.close()
        refused = [("Content-Type", "text/plain"), ("Content-Length", "0")]
        return FileAnswer(416, [*refused, ("Content-Range", f"bytes */{whole.size}")], None, 0)
    if spans is None:
        return whole
    kind, tail = fields["Content-Type"], []
    if len(spans) == 1:
        ((first, length),) = spans
        pieces: list[Piece] = [(first, length)]
        tail = [("Content-Range", f"bytes {first}-{first + length - 1}/{whole.size}")]
    else:
        boundary = f"{secrets.randbits(64):020d}"
        pieces = multipart(spans, whole.size, kind, boundary)
        kind = f"multipart/byteranges; boundary={boundary}"
    length = sum(len(p) if isinstance(p, bytes) else p[1] for p in pieces)
    kept = [(k, v) for k, v in whole.headers if k not in _RANGED]
    headers = [("Content-Type", kind), ("Content-Length", str(length)), *kept, *tail]
    return FileAnswer(206, headers, whole.handle, length, tuple(pieces))


def live_headers(record: FileRecord, info: os.stat_result) -> Headers:
    """The file changed since the last refresh: describe what is on disk now."""
    weak = f'W/"{info.st_size:x}-{info.st_mtime_ns:x}"'
    return [
        ("Content-Type", record.mime),
        ("Content-Length", str(info.st_size)),
        ("Last-Modified", http_date(info.st_mtime_ns)),
        ("ETag", weak),
        ("Accept-Ranges", "bytes"),
    ]


def not_modified(headers: Headers, environ: dict[str, Any]) -> bool:
    """Whether the request's conditions match these validators (If-None-Match first)."""
    fields = dict(headers)
    tags = parse_etags(environ.get("HTTP_IF_NONE_MATCH"))
    if tags:
        return tags.contains_weak(fields["ETag"].removeprefix("W/").strip('"'))
    since = parse_date(environ.get("HTTP_IF_MODIFIED_SINCE"))
    if since is not None:
        return parsedate_to_datetime(fields["Last-Modified"]) <= since
    return False
