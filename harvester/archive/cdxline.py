"""Which WARC records are captures, and the CDXJ line cdxj-indexer writes for each.

Both the writer (lines made as it writes) and the read-back of repaired files
(:mod:`harvester.archive.cdxreader`) decide alike, so the index is the same either way.
"""

from __future__ import annotations

import json
import re

from warcio.recordloader import ArcWarcRecord

from harvester.archive.cdxkey import timestamp, url_key

__all__ = ["CAPTURE_TYPES", "WARC_SUFFIXES", "capture_line", "is_capture"]

CAPTURE_TYPES = frozenset({"response", "resource", "revisit"})
WARC_SUFFIXES = (".warc.gz", ".warc")
_MIME_END = re.compile(r"[;\s]")


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
    url: str = headers.get_header("WARC-Target-URI")
    fields = {
        "url": url,
        "mime": _mime(record),
        "status": _status(record),
        "digest": headers.get_header("WARC-Payload-Digest"),
        "length": str(length),
        "offset": str(offset),
        "filename": filename,
    }
    block = json.dumps({name: value for name, value in fields.items() if value is not None})
    return f"{url_key(url)} {timestamp(headers.get_header('WARC-Date'))} {block}\n"


def _mime(record: ArcWarcRecord) -> str | None:
    """As cdxj-indexer: the media type without parameters, ``warc/revisit`` for revisits."""
    if record.rec_type == "revisit":
        return "warc/revisit"
    if record.rec_type == "response":
        value = record.http_headers.get_header("Content-Type") if record.http_headers else None
    else:
        value = record.rec_headers.get_header("Content-Type")
    return _MIME_END.split(value, maxsplit=1)[0].strip() if value else value


def _status(record: ArcWarcRecord) -> str | None:
    if record.rec_type in ("response", "revisit") and record.http_headers:
        status: str = record.http_headers.get_statuscode()
        return status
    return None
