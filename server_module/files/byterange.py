"""Range requests on a file (RFC 9110 §14), answered as nginx answers them.

Sans-IO: the ``Range`` and ``If-Range`` fields and the file's size and validators in, the
part to send out. The parse follows nginx's (``ngx_http_range_filter_module``), so a
browser seeking in audio or video, or a download resumed, gets what nginx would give it:

* a field that does not start ``bytes=`` (any case) is ignored: the whole file, 200;
* ``first-last``, ``first-`` and ``-suffix``, spaces allowed around the numbers; a last
  position past the end is the end, a suffix longer than the file is the whole file;
* a malformed field, or no range that starts inside the file, is 416 (``Unsatisfiable``);
* ranges that add up to more than the file are ignored (200), as nginx does.

Several ranges are answered as nginx answers them, with one ``multipart/byteranges`` body
(RFC 9110 §14.6; :func:`multipart`) laid out byte for byte as nginx lays it out.
``If-Range`` (§13.1.5) keeps the range only when it is the file's strong ETag or its exact
``Last-Modified`` date; anything else means the client's copy is stale, so it gets the whole
file.
"""

from __future__ import annotations

import re

__all__ = ["Piece", "Unsatisfiable", "if_range_holds", "multipart", "requested_ranges"]

Piece = bytes | tuple[int, int]  # bytes to send as they are, or (first, length) of the file

_PREFIX = "bytes="
_RANGE = re.compile(r" *(?:(\d+) *- *(\d*)|-(\d+)) *")


class Unsatisfiable(ValueError):
    """No range of the field can be sent: 416 with ``Content-Range: bytes */SIZE``."""


def requested_ranges(field: str | None, size: int) -> list[tuple[int, int]] | None:
    """The ``(first, length)`` of each range to send, or None for the whole file.

    >>> requested_ranges("bytes=0-9", 100), requested_ranges("bytes=-5", 100)
    ([(0, 10)], [(95, 5)])
    >>> requested_ranges("bytes= 90-200", 100), requested_ranges("items=0-5", 100)
    ([(90, 10)], None)
    >>> requested_ranges("bytes=0-0,5-9", 100), requested_ranges("bytes=0-", 0)
    ([(0, 1), (5, 5)], None)
    >>> requested_ranges("bytes=5-2", 100)
    Traceback (most recent call last):
    ...
    server_module.files.byterange.Unsatisfiable: bytes=5-2
    """
    if field is None or field[: len(_PREFIX)].lower() != _PREFIX:
        return None
    spans: list[tuple[int, int]] = []
    for item in field[len(_PREFIX) :].split(","):
        span = _span(item, size, field)
        if span is None:
            return None  # nginx declines: the whole file
        if span[0] < span[1]:
            spans.append(span)
    if not spans:
        raise Unsatisfiable(field)
    if sum(end - first for first, end in spans) > size:
        return None
    return [(first, end - first) for first, end in spans]


def multipart(
    spans: list[tuple[int, int]], size: int, content_type: str, boundary: str
) -> list[Piece]:
    """The ``multipart/byteranges`` body of several ranges, as nginx lays it out.

    >>> multipart([(0, 1), (5, 2)], 9, "text/plain", "B")  # doctest: +NORMALIZE_WHITESPACE
    [b'\\r\\n--B\\r\\nContent-Type: text/plain\\r\\nContent-Range: bytes 0-0/9\\r\\n\\r\\n', (0, 1),
     b'\\r\\n--B\\r\\nContent-Type: text/plain\\r\\nContent-Range: bytes 5-6/9\\r\\n\\r\\n', (5, 2),
     b'\\r\\n--B--\\r\\n']
    """
    pieces: list[Piece] = []
    for first, length in spans:
        head = (
            f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n"
            f"Content-Range: bytes {first}-{first + length - 1}/{size}\r\n\r\n"
        )
        pieces += [head.encode("latin-1"), (first, length)]
    pieces.append(f"\r\n--{boundary}--\r\n".encode("latin-1"))
    return pieces


def _span(item: str, size: int, field: str) -> tuple[int, int] | None:
    """``[first, end)`` of one range (empty when it starts past the end); None when nginx
    would answer the whole file (an open range from 0 of an empty file)."""
    match = _RANGE.fullmatch(item)
    if match is None:
        raise Unsatisfiable(field)
    first, last, suffix = match.groups()
    if suffix is not None:
        return max(size - int(suffix), 0), size
    start = int(first)
    end = size if last == "" else min(int(last) + 1, size)
    if start >= end and start == 0:
        return None
    return start, max(end, start)


def if_range_holds(field: str | None, etag: str, last_modified: str) -> bool:
    """Whether a range may be sent: no ``If-Range``, or one naming this very version.

    >>> if_range_holds('"a"', '"a"', "x"), if_range_holds('W/"a"', 'W/"a"', "x")
    (True, False)
    """
    if field is None:
        return True
    field = field.strip()
    if field.startswith('"') or field.startswith("W/"):
        return field == etag and not etag.startswith("W/")
    return field == last_modified
