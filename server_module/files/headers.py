"""The HTTP headers of a file: one function, so a GET and the ``http_header`` format agree.

The provider serves each file with exactly these entity headers, and the ``http_header``
metadata format reports exactly the same list. Per-exchange headers that the WSGI server adds
(``Date``, ``Server``, ``Connection``) describe the exchange, not the file, and are not part
of the record.
"""

from __future__ import annotations

from email.utils import formatdate

from server_module.records import FileRecord


def http_date(mtime_ns: int) -> str:
    """An RFC 9110 IMF-fixdate.

    >>> http_date(0)
    'Thu, 01 Jan 1970 00:00:00 GMT'
    """
    return formatdate(mtime_ns // 1_000_000_000, usegmt=True)


def etag(record: FileRecord) -> str:
    """A strong validator: it changes exactly when the content does."""
    return f'"{record.sha1}"'


def file_headers(record: FileRecord) -> list[tuple[str, str]]:
    """The headers a GET of the record's URL returns, in the order they are sent."""
    return [
        ("Content-Type", record.mime),
        ("Content-Length", str(record.size)),
        ("Last-Modified", http_date(record.mtime_ns)),
        ("ETag", etag(record)),
        ("Accept-Ranges", "bytes"),
    ]
