"""The records of a fetched resource's group, built by hand (:mod:`~harvester.archive.recordbytes`).

:class:`~harvester.archive.recorder.Recorder` writes one group per fetch: the content record
(``response``, or a ``revisit``), its ``request``, each redirect hop's ``response`` and
``request``, a crawled page's outlinks ``metadata`` and the closing DIDL ``metadata``. This
module builds each of them with the fields :class:`~harvester.archive.records.RecordFactory`
gives the same record, so the bytes are the ones warcio would write. A builder returns None
when an HTTP head is not ASCII; the recorder then makes the whole group with warcio.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harvester.archive.cdx.line import CaptureFields, media_type, with_request
from harvester.archive.recordbytes import (
    EMPTY_DIGEST,
    Built,
    Deflated,
    Field,
    http_block,
    large_deflated,
    record_member,
    sha1_base32,
    warc_block_digest,
    warc_digest,
)
from harvester.archive.records import Revisit
from harvester.archive.storedhead import StoredHead
from harvester.http.exchange import HttpExchange, first_header

__all__ = [
    "HOP_BY_HOP",
    "CarriedBody",
    "Payload",
    "Stamp",
    "carried",
    "carried_body",
    "exchange_group",
    "group",
    "metadata",
    "outlink_fields",
    "request",
    "response",
    "revisit",
    "stored_fields",
]

HOP_BY_HOP = frozenset({"transfer-encoding", "connection", "keep-alive"})
RESPONSE_TYPE = "application/http; msgtype=response"
REQUEST_TYPE = "application/http; msgtype=request"

Stamp = Callable[[], tuple[str, str]]  # a new (WARC-Record-ID, WARC-Date)


@dataclass(slots=True)
class Payload:
    """What the DIDL and the state need to know of a payload."""

    sha1: str
    sha256: str
    warc_digest: str  # as in WARC-Payload-Digest

    @classmethod
    def of(cls, body: bytes) -> Payload:
        sha1 = hashlib.sha1(body)
        return cls(
            sha1.hexdigest(),
            hashlib.sha256(body).hexdigest(),
            "sha1:" + sha1_base32(sha1.digest()),
        )


def group(
    stamp: Stamp,
    result: HttpExchange,
    payload_digest: str,
    seen: Revisit | None,
    outlinks: Sequence[str] | None = None,
    followed: Sequence[HttpExchange] = (),
) -> list[Built] | None:
    """A fetch's records up to its DIDL record: ``result``'s response (its body's WARC digest
    ``payload_digest``), or its revisit of ``seen``; its request; each hop's response and
    request; the outlinks record of a crawled page. None if any HTTP head is not ASCII."""
    content = (
        response(stamp, result, payload_digest) if seen is None else revisit(stamp, result, seen)
    )
    if content is None:
        return None
    records = [content, request(stamp, result, content.record_id, content.warc_date)]
    for hop in followed:
        hop_content = response(stamp, hop, warc_digest(hop.body))
        records += [
            hop_content,
            hop_content and request(stamp, hop, hop_content.record_id, hop_content.warc_date),
        ]
    if outlinks is not None:
        records.append(
            metadata(
                stamp,
                outlink_fields(result, outlinks),
                content_type="application/warc-fields",
                refers_to=content.record_id,
                target_uri=result.url,
            )
        )
    built = [r for r in records if r is not None]
    return built if len(built) == len(records) else None


def exchange_group(stamp: Stamp, exchange: HttpExchange) -> list[Built] | None:
    """A raw exchange as records mode archives each list page: its ``response``, its
    ``request`` and a ``metadata`` note without a target URI closing the group
    (``oai-exchange: URL``), as :meth:`~harvester.archive.recorder.Recorder.exchange` makes
    them with warcio. None if an HTTP head is not ASCII (warcio's then)."""
    content = response(stamp, exchange, warc_digest(exchange.body))
    sent = content and request(stamp, exchange, content.record_id, content.warc_date)
    if content is None or sent is None:
        return None
    note = metadata(
        stamp,
        f"oai-exchange: {exchange.url}\r\n".encode(),
        content_type="application/warc-fields",
        refers_to=content.record_id,
    )
    return [content, sent, note]


@dataclass(frozen=True)
class CarriedBody:
    """A file carried by value, made ready for its record (:func:`carried_body`): its
    digests, the HTTP head its ``response`` record holds (None for a ``resource`` record)
    with that block's digest, and the bytes compressed."""

    body: bytes
    payload: Payload
    http: bytes | None
    block_digest: str | None  # of ``http`` then ``body``; None without ``http``
    compressed: Deflated | None  # None for a small body, compressed with its record at once


def carried_body(
    body: bytes, headers: Sequence[Field] | None, payload: Payload | None = None
) -> CarriedBody | None:
    """What :func:`carried` needs of ``body`` besides the record's ID and date: the hashing
    and compressing, done where the caller likes (strategy ``didl``: the thread that reads
    the pages ahead). ``headers`` are the provider's (none: a ``resource`` record);
    ``payload`` its digests when known. None when the head is not ASCII (warcio's then)."""
    payload = payload or Payload.of(body)
    http = block = None
    if headers:
        http = http_block(
            "HTTP/1.1", "200 OK", [f for f in headers if f[0].lower() not in HOP_BY_HOP]
        )
        if http is None:
            return None
        block = warc_block_digest(http, body)
    compressed = large_deflated(body)
    return CarriedBody(body, payload, http, block, compressed)


def carried(
    stamp: Stamp,
    url: str,
    mime: str,
    headers: Sequence[Field] | None,
    ready: CarriedBody,
    ip: str | None = None,
) -> Built | None:
    """The record of a resource carried by value in an ``oai_didl`` record, as
    :meth:`~harvester.archive.recorder.Recorder.carried` makes it with warcio: with the
    provider's ``headers``, a ``response`` of status ``HTTP/1.1 200 OK``; without, a
    ``resource`` record of type ``mime``. ``ready`` is :func:`carried_body` of the same
    headers. ``ip`` is the provider's address, which the bytes came from. None when
    ``mime`` is not printable ASCII (warcio's then)."""
    digest = ready.payload.warc_digest
    if ready.http is None:
        if not _printable(mime):
            return None
        kind, content_type, status = "resource", mime, None
        mime_seen: str | None = mime
    else:
        kind, content_type, status = "response", RESPONSE_TYPE, "200"
        mime_seen = first_header(headers or (), "content-type")
    made = stamp()
    fields = _present(("WARC-IP-Address", ip))
    member = record_member(kind, made, url, fields, content_type=content_type,
                           http=ready.http or b"", payload=ready.body, payload_digest=digest,
                           block_digest=ready.block_digest,
                           compressed=ready.compressed)  # fmt: skip
    capture = CaptureFields(url, media_type(mime_seen), status, digest)
    return Built(made[0], made[1], member, capture)


def outlink_fields(result: HttpExchange, outlinks: Sequence[str]) -> bytes:
    """Heritrix's fields of a crawled URL's metadata record: its fetch time (``fetchTimeMs``:
    request to the body's end) and one ``outlink`` field per link."""
    fields = [f"fetchTimeMs: {round(result.elapsed * 1000)}\r\n"]
    fields += [f"outlink: {link}\r\n" for link in outlinks]
    return "".join(fields).encode("utf-8")


def stored_fields(exchange: HttpExchange) -> list[Field]:
    """The response's header fields as archived: hop-by-hop ones left out (the body stored
    is already de-chunked)."""
    return [(k, v) for k, v in exchange.response_headers if k.lower() not in HOP_BY_HOP]


def response(stamp: Stamp, exchange: HttpExchange, payload_digest: str) -> Built | None:
    """The ``response`` record of ``exchange``, whose body's WARC digest is ``payload_digest``."""
    stored = stored_fields(exchange)
    http = _response_head(exchange, stored)
    if http is None:
        return None
    fields = _present(("WARC-IP-Address", exchange.peer_ip), ("WARC-Truncated", exchange.truncated))
    made = stamp()
    member = record_member(
        "response",
        made,
        exchange.url,
        fields,
        content_type=RESPONSE_TYPE,
        http=http,
        payload=exchange.body,
        payload_digest=payload_digest,
    )
    mime = media_type(first_header(stored, "content-type"))
    capture = CaptureFields(exchange.url, mime, str(exchange.status), payload_digest)
    if exchange.request_body:
        sent_type = first_header(exchange.request_headers, "content-type")
        with_request(capture, exchange.method, sent_type, exchange.request_body)
    return Built(made[0], made[1], member, capture)


def revisit(stamp: Stamp, exchange: HttpExchange, of: Revisit) -> Built | None:
    """A ``revisit`` record of ``exchange`` (section 6.7): an HTTP head and no payload. The
    head is ``of.head`` when given (a 304's: the stored head it freshens), else the
    exchange's (a 200 whose payload is the one stored)."""
    head = of.head or revisit_head(exchange)
    http = http_block(head.protocol, head.status, head.fields)
    if http is None:
        return None
    fields = _present(*of.fields(exchange.peer_ip).items())
    made = stamp()
    member = record_member(
        "revisit", made, exchange.url, fields, content_type=RESPONSE_TYPE, http=http
    )
    status = head.status.split(" ", 1)[0]
    capture = CaptureFields(exchange.url, "warc/revisit", status, of.payload_digest)
    return Built(made[0], made[1], member, capture)


def revisit_head(exchange: HttpExchange) -> StoredHead:
    """The head of ``exchange`` as a revisit of it stores it (hop-by-hop fields left out)."""
    status = f"{exchange.status} {exchange.reason}"
    return StoredHead(exchange.protocol, status, tuple(stored_fields(exchange)))


def request(
    stamp: Stamp, exchange: HttpExchange, concurrent_to: str, date: str | None = None
) -> Built | None:
    """The ``request`` record of ``exchange``; ``concurrent_to`` is its response's ID and
    ``date`` that record's WARC-Date, which the request shares (WARC 1.1 section 5.4: the
    records of one capture event "shall use the same" date)."""
    method, rest = exchange.request_line.split(" ", 1)
    http = http_block(method, rest, exchange.request_headers)
    if http is None:
        return None
    fields = _present(("WARC-Concurrent-To", concurrent_to), ("WARC-IP-Address", exchange.peer_ip))
    made = stamp()
    made = (made[0], date or made[1])
    member = record_member(
        "request",
        made,
        exchange.url,
        fields,
        content_type=REQUEST_TYPE,
        http=http,
        payload=exchange.request_body,
        # of an empty payload, known: not hashed again
        payload_digest=None if exchange.request_body else EMPTY_DIGEST,
    )
    return Built(made[0], made[1], member)


def metadata(
    stamp: Stamp,
    payload: bytes,
    *,
    content_type: str = "application/xml",
    refers_to: str | None = None,
    target_uri: str = "",
    concurrent_to: str | None = None,
) -> Built:
    """A ``metadata`` record, as :meth:`RecordFactory.metadata_record` makes it."""
    made = stamp()
    fields = _present(("WARC-Refers-To", refers_to), ("WARC-Concurrent-To", concurrent_to))
    member = record_member(
        "metadata", made, target_uri, fields, content_type=content_type, payload=payload
    )
    return Built(made[0], made[1], member)


def _response_head(exchange: HttpExchange, stored: Sequence[Field]) -> bytes | None:
    return http_block(exchange.protocol, f"{exchange.status} {exchange.reason}", stored)


def _present(*fields: tuple[str, str | None]) -> list[Field]:
    """The fields that have a value (an empty one included), as RecordFactory keeps them."""
    return [(name, value) for name, value in fields if value is not None]


def _printable(value: str) -> bool:
    return value.isascii() and value.isprintable()
