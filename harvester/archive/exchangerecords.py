"""The WARC records of one raw OAI-PMH exchange, built by hand as gzip members.

Records mode archives every list page as received: a ``response`` record, its ``request``
(WARC-Concurrent-To the response) and a ``metadata`` note without a target URI closing the
group (``oai-exchange: URL``), as :meth:`~harvester.archive.recorder.Recorder.exchange`
makes them with warcio's builder and writer. These are the same bytes, header fields in the
same order with the same digests, made without warcio's header objects, stream copies and
per-record writer: a hundred-record page is archived at the cost of its two SHA-1 passes and
one deflate. Hashing and deflating large buffers release the GIL, so the list's own thread
can build a page's records while the main thread stores the page before.

Header fields that are not ASCII are percent-encoded by warcio (RFC 8187); such an exchange
is left to warcio's builder (:func:`exchange_members` returns None).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from harvester.archive.metarecord import gzip_member, metadata_member
from harvester.archive.records import WARC_VERSION
from harvester.exchange import HttpExchange

__all__ = ["BuiltRecord", "exchange_members"]

HOP_BY_HOP = frozenset({"transfer-encoding", "connection", "keep-alive"})  # as the recorder's
WARC_VERSION_LINE = "WARC/" + WARC_VERSION
_RESPONSE_TYPE = "application/http; msgtype=response"
_REQUEST_TYPE = "application/http; msgtype=request"
_NOTE_TYPE = "application/warc-fields"
_EMPTY_DIGEST = "sha1:" + base64.b32encode(hashlib.sha1(b"").digest()).decode("ascii")


@dataclass(frozen=True)
class BuiltRecord:
    """One record built elsewhere: its ID, date and gzip member; for a capture, a copy of
    its headers without a body (what its CDXJ line is made of)."""

    record_id: str
    warc_date: str
    member: bytes
    capture: ArcWarcRecord | None = None


def exchange_members(
    exchange: HttpExchange, stamps: Sequence[tuple[str, str]]
) -> list[BuiltRecord] | None:
    """The response, request and closing note of ``exchange``, with the three
    (WARC-Record-ID, WARC-Date) ``stamps``; None if a header field is not ASCII."""
    fields = [(k, v) for k, v in exchange.response_headers if k.lower() not in HOP_BY_HOP]
    status = f"{exchange.status} {exchange.reason}"
    try:
        response_head = _http_head(f"{exchange.protocol} {status}", fields)
        request_head = _http_head(exchange.request_line, exchange.request_headers)
    except UnicodeEncodeError:
        return None
    (response_id, response_date), (request_id, request_date), (note_id, note_date) = stamps
    ip = [] if exchange.peer_ip is None else [("WARC-IP-Address", exchange.peer_ip)]
    cut = [] if exchange.truncated is None else [("WARC-Truncated", exchange.truncated)]
    body = exchange.body
    response = _warc_head(
        [("WARC-Type", "response"), ("WARC-Record-ID", response_id),
         ("WARC-Date", response_date), ("WARC-Target-URI", exchange.url), *ip, *cut,
         ("WARC-Payload-Digest", _digest(body)),
         ("WARC-Block-Digest", _digest(response_head, body)),
         ("Content-Type", _RESPONSE_TYPE), ("Content-Length", str(len(response_head) + len(body)))],
    )  # fmt: skip
    request = _warc_head(
        [("WARC-Type", "request"), ("WARC-Record-ID", request_id), ("WARC-Date", request_date),
         ("WARC-Target-URI", exchange.url), ("WARC-Concurrent-To", response_id),
         *ip,
         ("WARC-Payload-Digest", _EMPTY_DIGEST), ("WARC-Block-Digest", _digest(request_head)),
         ("Content-Type", _REQUEST_TYPE), ("Content-Length", str(len(request_head)))],
    )  # fmt: skip
    note = f"oai-exchange: {exchange.url}\r\n".encode()
    http = StatusAndHeaders(status, fields, exchange.protocol)
    return [
        BuiltRecord(
            response_id,
            response_date,
            gzip_member(b"".join((response.encode("utf-8"), response_head, body, b"\r\n\r\n"))),
            _capture(response, http),
        ),
        BuiltRecord(
            request_id, request_date, gzip_member(request.encode() + request_head + b"\r\n\r\n")
        ),
        BuiltRecord(
            note_id,
            note_date,
            metadata_member(note, note_id, note_date, _NOTE_TYPE, refers_to=response_id),
        ),
    ]


def _http_head(first_line: str, fields: Sequence[tuple[str, str]]) -> bytes:
    """The HTTP head as warcio writes it into the record's block (ASCII, or an error)."""
    lines = [first_line, *(f"{name}: {value}" for name, value in fields)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def _warc_head(fields: Sequence[tuple[str, str]]) -> str:
    return f"{WARC_VERSION_LINE}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields) + "\r\n"


def _digest(*parts: bytes) -> str:
    sha1 = hashlib.sha1()
    for part in parts:
        sha1.update(part)
    return "sha1:" + base64.b32encode(sha1.digest()).decode("ascii")


def _capture(head: str, http: StatusAndHeaders) -> ArcWarcRecord:
    """The response's headers as a body-less record, for its CDXJ line."""
    warc = [tuple(line.split(": ", 1)) for line in head.split("\r\n")[1:] if line]
    return ArcWarcRecord(
        "warc", "response", StatusAndHeaders("", warc, WARC_VERSION_LINE), None, http, "", 0
    )
