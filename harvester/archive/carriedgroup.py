"""The group of a resource carried by value in an ``oai_didl`` record (strategy ``didl``).

Its bytes did not come from a GET of its URL: the provider sent them, base64 in a
``didl:Resource``, in the answer to a ListRecords request, with the header fields a GET would
return in the DIDL's ``http_header`` descriptor. The content record is a ``response`` of
``HTTP/1.1 200 OK`` with those fields (a ``resource`` record when the provider gave none), so
replay serves it as any capture; WARC-IP-Address is the provider's, the address the page came
from. What sets it apart from a network capture is a concurrent ``metadata`` record
(``WARC-Concurrent-To`` the content record, the same URI and date, ``application/warc-fields``,
which replay indexers skip) naming where its head and its bytes came from:

    rebuilt-from: oai_didl
    source-uri: http://www.example.org/oai?verb=ListRecords&metadataPrefix=oai_didl
    http-head: http_header descriptor
    payload: didl:Resource base64

A file whose payload is the one its last capture holds (touched, not changed) is recorded as
a ``revisit`` of that capture with the provider's head, as strategy ``get`` records it
(:mod:`harvester.archive.recorder`), with the same note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from harvester.archive import capturegroup
from harvester.archive.capturegroup import CarriedBody, Stamp
from harvester.archive.recordbytes import Built, Field
from harvester.archive.records import Revisit
from harvester.http.exchange import HttpExchange

__all__ = ["CarriedExchange", "group", "note_fields", "revisit_group"]

NOTE_TYPE = "application/warc-fields"
_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)  # a carried resource was not requested


@dataclass(frozen=True)
class CarriedExchange:
    """The parts of an HttpExchange that a by-value resource also has."""

    url: str
    status: int
    reason: str
    protocol: str
    response_headers: list[tuple[str, str]]
    body: bytes
    truncated: str | None
    record_type: str  # response (with the provider's headers), resource, or revisit
    peer_ip: str | None = None  # the provider's, the list page's WARC-IP-Address
    source_uri: str | None = None  # the ListRecords request whose answer carried it


def note_fields(carried: CarriedExchange, with_head: bool) -> bytes:
    """The fields of the note saying where a carried record's head and bytes came from.

    >>> c = CarriedExchange("http://h/a", 200, "OK", "HTTP/1.1", [], b"", None, "response",
    ...                     "127.0.0.1", "http://h/oai?verb=ListRecords")
    >>> print(note_fields(c, True).decode().replace("\\r", ""), end="")
    rebuilt-from: oai_didl
    source-uri: http://h/oai?verb=ListRecords
    http-head: http_header descriptor
    payload: didl:Resource base64
    """
    lines = ["rebuilt-from: oai_didl"]
    if carried.source_uri:
        lines.append(f"source-uri: {carried.source_uri}")
    lines.append("http-head: " + ("http_header descriptor" if with_head else "none"))
    lines.append("payload: didl:Resource base64")
    return "".join(f"{line}\r\n" for line in lines).encode("utf-8")


def group(
    stamp: Stamp,
    carried: CarriedExchange,
    mime: str,
    headers: Sequence[Field] | None,
    ready: CarriedBody,
) -> list[Built] | None:
    """The content record (:func:`capturegroup.carried`) and its note; None when a head is
    not ASCII (warcio's then)."""
    content = capturegroup.carried(stamp, carried.url, mime, headers, ready, ip=carried.peer_ip)
    if content is None:
        return None
    return [content, note(stamp, carried, content, with_head=ready.http is not None)]


def revisit_group(stamp: Stamp, carried: CarriedExchange, seen: Revisit) -> list[Built] | None:
    """A ``revisit`` of ``seen`` with the provider's head, and its note; None when the head
    is not ASCII."""
    exchange = HttpExchange(
        url=carried.url,
        method="GET",
        protocol=carried.protocol,
        status=carried.status,
        reason=carried.reason,
        request_headers=(),
        response_headers=tuple(carried.response_headers),
        body=b"",
        started=_NO_TIME,
        peer_ip=carried.peer_ip,
    )
    content = capturegroup.revisit(stamp, exchange, seen)
    if content is None:
        return None
    return [content, note(stamp, carried, content, with_head=True)]


def note(stamp: Stamp, carried: CarriedExchange, content: Built, *, with_head: bool) -> Built:
    """The concurrent ``metadata`` record of ``content``: its URI, its date."""
    made = stamp()
    return capturegroup.metadata(
        lambda: (made[0], content.warc_date),
        note_fields(carried, with_head),
        content_type=NOTE_TYPE,
        target_uri=carried.url,
        concurrent_to=content.record_id,
    )
