"""A ``metadata`` WARC record without a target URI, built by hand as one gzip member.

The records a DIDL-only group holds (records mode writes one per item, thousands a second)
are the same bytes warcio's builder and writer make for
:meth:`~harvester.archive.records.RecordFactory.metadata_record` (the same header fields in
the same order, both digests), at a fraction of the CPU: warcio's header objects, its two
passes over the payload and its per-record writer cost more than the record itself.

Each gzip member is compressed at level 6 with a window no larger than the record needs
(at least 512 bytes, at most zlib's 32 KiB): a window larger than the data changes nothing
in the output, but zlib's set-up of the full window and hash table cost three times the
compression of a 2 KB record (measured in ``bench/README.md``, ``## ingest``).
"""

from __future__ import annotations

import base64
import hashlib
import zlib

__all__ = ["GZIP_LEVEL", "gzip_member", "metadata_member"]

GZIP_LEVEL = 6  # as harvester.archive.warc writes every other record
_MIN_BITS, _MAX_BITS = 9, zlib.MAX_WBITS


def metadata_member(
    payload: bytes,
    record_id: str,
    warc_date: str,
    content_type: str = "application/xml",
    *,
    refers_to: str | None = None,
) -> bytes:
    """The record, as a gzip member: ``record_id`` with its ``<>``, ``warc_date`` as the
    WARC-Date field is written; with ``refers_to``, a WARC-Refers-To field."""
    digest = "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode("ascii")
    refers = "" if refers_to is None else f"WARC-Refers-To: {refers_to}\r\n"
    head = (
        "WARC/1.1\r\n"
        "WARC-Type: metadata\r\n"
        f"WARC-Record-ID: {record_id}\r\n"
        f"WARC-Date: {warc_date}\r\n"
        f"{refers}"
        f"WARC-Payload-Digest: {digest}\r\n"
        f"WARC-Block-Digest: {digest}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return gzip_member(head.encode("utf-8") + payload + b"\r\n\r\n")


def gzip_member(data: bytes) -> bytes:
    """``data`` as one gzip member at level 6, its window sized to the data.

    >>> import gzip; gzip.decompress(gzip_member(b"WARC/1.1")) == b"WARC/1.1"
    True
    """
    bits = max(_MIN_BITS, min(_MAX_BITS, len(data).bit_length()))
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + bits, max(1, bits - 7))
    return compressor.compress(data) + compressor.flush()
