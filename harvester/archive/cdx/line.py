"""Which WARC records are captures, and the CDXJ line cdxj-indexer writes for each.

Both the writer (lines made as it writes) and the read-back of repaired files
(:mod:`harvester.archive.cdx.reader`) decide alike, so the index is the same either way.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass

from warcio.recordloader import ArcWarcRecord

from harvester.archive.cdx.key import timestamp, url_key

__all__ = [
    "CAPTURE_TYPES",
    "WARC_SUFFIXES",
    "CaptureFields",
    "capture_line",
    "is_capture",
    "line",
    "media_type",
]

CAPTURE_TYPES = frozenset({"response", "resource", "revisit"})
WARC_SUFFIXES = (".warc.gz", ".warc")
_MIME_END = re.compile(r"[;\s]")


@dataclass(slots=True)
class CaptureFields:
    """What a capture record's CDXJ line says of it, besides where it is: the fields a
    record built by hand (:mod:`harvester.archive.recordbytes`) carries for its line."""

    url: str
    mime: str | None
    status: str | None
    digest: str | None
    method: str | None = None  # POST or PUT: the request's, keyed as cdxj-indexer --post-append
    request_body: str = ""  # that request's body as a query (cdxj-indexer's requestBody)
    key_suffix: str = ""  # ?__wb_method=POST&..., appended to the URL before keying


def is_capture(record: ArcWarcRecord) -> bool:
    headers = record.rec_headers
    return (
        record.rec_type in CAPTURE_TYPES
        and bool(headers.get_header("WARC-Target-URI"))
        and headers.get_header("Content-Type") != "application/warc-fields"
    )


def capture_line(record: ArcWarcRecord, filename: str, offset: int, length: int) -> str | None:
    """The CDXJ line cdxj-indexer writes for ``record``, written at ``offset`` of the file
    ``filename`` as a gzip member of ``length`` bytes; None if it is not a capture."""
    if not is_capture(record):
        return None
    headers = record.rec_headers
    fields = CaptureFields(
        headers.get_header("WARC-Target-URI"),
        _mime(record),
        _status(record),
        headers.get_header("WARC-Payload-Digest"),
    )
    return line(fields, headers.get_header("WARC-Date"), filename, offset, length)


def line(capture: CaptureFields, warc_date: str, filename: str, offset: int, length: int) -> str:
    """The CDXJ line of a capture record dated ``warc_date``, written at ``offset`` of the file
    ``filename`` as a gzip member of ``length`` bytes."""
    fields = {
        "url": capture.url,
        "mime": capture.mime,
        "status": capture.status,
        "digest": capture.digest,
        "length": str(length),
        "offset": str(offset),
        "filename": filename,
    }
    if capture.method is not None:
        fields |= {"requestBody": capture.request_body, "method": capture.method}
    block = json.dumps({name: value for name, value in fields.items() if value is not None})
    return f"{url_key(capture.url + capture.key_suffix)} {timestamp(warc_date)} {block}\n"


def with_request(
    capture: CaptureFields, method: str, content_type: str | None, body: bytes
) -> None:
    """``capture`` keyed by its POST or PUT request as cdxj-indexer's ``--post-append`` keys
    it (pywb looks a replayed POST up so): the method and body appended as a query."""
    if method not in ("POST", "PUT"):
        return
    # imported for a POST alone: cdxj-indexer loads surt, tldextract and requests (80 ms)
    from cdxj_indexer.postquery import append_method_query  # type: ignore[import-untyped]

    query, suffix = append_method_query(
        method, content_type, str(len(body)), io.BytesIO(body), capture.url
    )
    capture.method, capture.request_body, capture.key_suffix = method, query, suffix


def _mime(record: ArcWarcRecord) -> str | None:
    """As cdxj-indexer: the media type without parameters, ``warc/revisit`` for revisits."""
    if record.rec_type == "revisit":
        return "warc/revisit"
    if record.rec_type == "response":
        value = record.http_headers.get_header("Content-Type") if record.http_headers else None
    else:
        value = record.rec_headers.get_header("Content-Type")
    return media_type(value)


def media_type(content_type: str | None) -> str | None:
    """A Content-Type's media type without its parameters, as cdxj-indexer writes it.

    >>> media_type("text/html; charset=utf-8"), media_type(""), media_type(None)
    ('text/html', '', None)
    """
    return _MIME_END.split(content_type, maxsplit=1)[0].strip() if content_type else content_type


def _status(record: ArcWarcRecord) -> str | None:
    if record.rec_type in ("response", "revisit") and record.http_headers:
        status: str = record.http_headers.get_statuscode()
        return status
    return None
