"""An ``oai_didl`` list page in the archive (strategy ``didl``): written with the bytes it
carries by value kept only in their own records, and rebuilt from those records on reading.

The page is a WARC/1.1 ``revisit`` record (ISO 28500:2017 §6.7: a record that "might include
only an abbreviated content body which has to be interpreted relative to a previous record")
of the profile :data:`ELIDED_PROFILE`, defined here and in ``docs/architecture.md``:

* its block is the HTTP response as received (status line and header fields, hop-by-hop ones
  dropped as in every response record), then the payload with each carried file's base64
  text replaced by the ``urn:uuid:…`` of the ``response`` or ``resource`` record holding the
  file's bytes (:mod:`harvester.listed.elision`);
* its ``WARC-Payload-Digest`` is the digest of the payload as received, before elision, as a
  revisit of the identical-payload-digest profile holds the digest of the payload it omits;
* the request record follows it (WARC-Concurrent-To the page), then the ``metadata`` record
  closing the group (``application/warc-fields``, WARC-Refers-To the page): ``oai-exchange:
  URL``, then one ``elided: OFFSET LENGTH <urn:uuid:…>`` field per elision, in order.

Every record a page refers to precedes it in the same WARC file. A page that arrived
content-coded (the client asks for none), or carries nothing that can be elided, is kept
whole as a ``response`` record, as every other exchange is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders

from harvester.archive.capturegroup import (
    RESPONSE_TYPE,
    Stamp,
    metadata,
    request,
    stored_fields,
)
from harvester.archive.recordbytes import Built, http_block, record_member, warc_digest
from harvester.archive.recorder import Recorder
from harvester.archive.warc import RecordLocation
from harvester.http.exchange import HttpExchange
from harvester.listed.elision import Carried, Elision, elide, rebuild

__all__ = ["ELIDED_PROFILE", "ElidedPage", "ListPages", "write_page"]

ELIDED_PROFILE = "urn:x-coop-archive:warc-profile:oai-didl-elided:1"
_FIELDS = "application/warc-fields"


def write_page(
    recorder: Recorder, exchange: HttpExchange, carried: Sequence[Carried]
) -> list[RecordLocation]:
    """The page's group: elided revisit + request + note, or the whole exchange."""
    coding = (exchange.header("Content-Encoding") or "identity").strip().lower()
    elided, elisions = elide(exchange.body, carried) if coding == "identity" else (b"", [])
    if not elisions:  # nothing elided: kept whole
        return recorder.exchange(exchange)
    digest = warc_digest(exchange.body)
    built = _elided_group(recorder.writer.stamp, exchange, digest, elided, elisions)
    if built is None:  # a head that is not ASCII: kept whole
        return recorder.exchange(exchange)
    return recorder.writer.write_built(built)


def _elided_group(
    stamp: Stamp,
    exchange: HttpExchange,
    payload_digest: str,
    elided: bytes,
    elisions: Sequence[Elision],
) -> list[Built] | None:
    """The revisit (its HTTP block the head as received and the elided payload; no CDXJ
    line, so replay never serves it), its request and the note listing the elisions."""
    head = http_block(exchange.protocol, f"{exchange.status} {exchange.reason}",
                      stored_fields(exchange))  # fmt: skip
    if head is None:
        return None
    made = stamp()
    fields = [("WARC-IP-Address", exchange.peer_ip)] if exchange.peer_ip else []
    fields += [("WARC-Profile", ELIDED_PROFILE),
               ("WARC-Payload-Digest", payload_digest)]  # fmt: skip
    page = record_member(
        "revisit", made, exchange.url, fields, content_type=RESPONSE_TYPE, http=head + elided
    )
    sent = request(stamp, exchange, made[0], made[1])
    if sent is None:
        return None
    lines = [f"oai-exchange: {exchange.url}\r\n"] + [f"elided: {e.field()}\r\n" for e in elisions]
    note = metadata(stamp, "".join(lines).encode("utf-8"), content_type=_FIELDS, refers_to=made[0])
    return [Built(made[0], made[1], page), sent, note]


# -- reading ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ElidedPage:
    """An elided page's record: where it is, what it says of the payload received."""

    record_id: str
    url: str
    profile: str
    payload_digest: str  # of the payload as received
    stored_length: int  # of the elided payload
    at: tuple[Path, int]  # its file and offset


class ListPages:
    """The elided list pages of a collection's WARC files, and each one rebuilt."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self._offsets: dict[str, tuple[Path, int]] = {}
        self._elisions: dict[str, list[Elision]] = {}
        self.elided: list[ElidedPage] = []
        for path in paths:
            self._scan(path)

    def rebuild(self, record_id: str) -> bytes:
        """The payload of page ``record_id`` as received. ``ValueError`` when a record it
        refers to is missing or holds other bytes, or the result is not what was received."""
        page = next((p for p in self.elided if p.record_id == record_id), None)
        if page is None:
            raise ValueError(f"no elided list page {record_id}")
        elided = self._payload(page.at)
        payload = rebuild(elided, self._elisions.get(record_id, []), self._body)
        if warc_digest(payload) != page.payload_digest:
            raise ValueError(f"{record_id} rebuilt to other bytes than those received")
        return payload

    def _body(self, record_id: str) -> bytes:
        at = self._offsets.get(record_id)
        if at is None:
            raise ValueError(f"{record_id} is not in these WARC files")
        return self._payload(at)

    def _scan(self, path: Path) -> None:
        with open(path, "rb") as fh:
            records = ArchiveIterator(fh)
            for record in records:
                headers = record.rec_headers
                record_id = headers.get_header("WARC-Record-ID")
                page = headers.get_header("WARC-Profile") == ELIDED_PROFILE
                note = record.rec_type == "metadata" and record.content_type == _FIELDS
                block = record.raw_stream.read() if page or note else b""
                at = (path, records.get_record_offset())  # reads the rest of the record
                self._offsets[record_id] = at
                if page:
                    self.elided.append(_page(headers, len(block), at))
                elif note:
                    self._note(headers.get_header("WARC-Refers-To"), block)

    def _note(self, refers_to: str | None, block: bytes) -> None:
        elisions = [Elision.parse(v) for v in _fields(block, "elided")]
        if refers_to and elisions:
            self._elisions[refers_to] = elisions

    @staticmethod
    def _payload(at: tuple[Path, int]) -> bytes:
        """The payload of the record at ``at``: the bytes after its HTTP header, if any."""
        path, offset = at
        with open(path, "rb") as fh:
            fh.seek(offset)
            record = next(iter(ArchiveIterator(fh)))
            data: bytes = record.raw_stream.read()
            return data


def _page(headers: StatusAndHeaders, stored: int, at: tuple[Path, int]) -> ElidedPage:
    return ElidedPage(
        record_id=headers.get_header("WARC-Record-ID"),
        url=headers.get_header("WARC-Target-URI"),
        profile=headers.get_header("WARC-Profile"),
        payload_digest=headers.get_header("WARC-Payload-Digest"),
        stored_length=stored,
        at=at,
    )


def _fields(block: bytes, name: str) -> Iterator[str]:
    """The values of the ``name`` fields of an ``application/warc-fields`` block."""
    for line in block.decode("utf-8", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == name:
            yield value.strip()
