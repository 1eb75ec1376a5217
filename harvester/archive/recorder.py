"""The recorder: turns captures into WARC record groups, each closed by its DIDL record.

One group per resource, written into one file in one flush:

* fetched: ``response`` + ``request`` (WARC-Concurrent-To); then, for a listed URL that
  redirects, the ``response`` + ``request`` of every hop followed, each under its own URI; then
  a crawled URL's ``metadata`` (its fetch time and outlinks); then the DIDL ``metadata``;
* unchanged (a 304, or the same payload digest): ``revisit`` + ``request``, then the DIDL;
  the revisit (profile identical-payload-digest) holds a 200 head, so that replay serves it:
  the answer's, or for a 304 the last capture's head freshened by it
  (:mod:`harvester.archive.storedhead`; ``docs/collection.md`` says why);
* carried by value in an ``oai_didl`` record: ``response`` with the provider's own headers
  from the DIDL's ``http_header`` descriptor (so replay serves its Last-Modified and ETag, and
  the next run's conditional GET sends them), or ``resource`` when it has none, or a
  ``revisit`` when its payload is the last capture's; a concurrent note naming the list page
  it came from (:mod:`harvester.archive.carriedgroup`); then the DIDL;
* deleted: one DIDL ``metadata`` record saying so.

Every group ends with a ``metadata`` record without a WARC-Target-URI (a DIDL record, or the
note closing an OAI-PMH exchange), and no other record of a group is one: the outlinks record
names its page. Crash repair, given :func:`ends_group`, cuts a ``.open`` file back to the last
such record, so it never leaves half a group; :meth:`Recorder.reconcile` then finds groups that
reached the disk before the state heard of them.

Every record is made from the one :class:`~harvester.http.exchange.HttpExchange`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from harvester import __version__
from harvester.archive import capturegroup, carriedgroup
from harvester.archive.capturegroup import HOP_BY_HOP, Payload
from harvester.archive.carriedgroup import CarriedExchange
from harvester.archive.didl import FALLBACK_MIME, Provenance
from harvester.archive.didlrecord import capture_document, deletion_document
from harvester.archive.formatid.identifier import Identifier, payload_of, statements
from harvester.archive.recordbytes import Built
from harvester.archive.records import Revisit
from harvester.archive.recovery import capture_of, ends_group, recovered
from harvester.archive.storedhead import StoredHead, refreshed, stored_head
from harvester.archive.warc import RecordLocation, RotatingWARCWriter
from harvester.exceptions import ArchiveError
from harvester.http.exchange import HttpExchange, first_header
from harvester.storage.protocol import Capture, Resource

__all__ = ["Payload", "Recorder", "conditional_headers", "ends_group"]

log = logging.getLogger(__name__)
R = TypeVar("R")  # a record: built by hand (Built), or by warcio (ArcWarcRecord)


def conditional_headers(res: Resource | None) -> dict[str, str]:
    """If-None-Match / If-Modified-Since from the last capture, when a 304 could be recorded
    as a revisit of it (that needs its digests)."""
    if res is None or not (res.record_id and res.sha1 and res.sha256):
        return {}
    headers = {"If-None-Match": res.etag} if res.etag else {}
    if res.last_modified:
        headers["If-Modified-Since"] = res.last_modified
    return headers


class Recorder:
    def __init__(
        self,
        writer: RotatingWARCWriter,
        *,
        strategy: str,
        endpoint: str | None,
        identifier: Identifier | None = None,
    ) -> None:
        self.writer = writer
        self.strategy = strategy
        self.endpoint = endpoint
        self.identifier = identifier  # format identification of payloads (--identify)

    def provenance(self) -> Provenance:
        return Provenance(
            agent="coop-archive-harvester",
            version=__version__,
            harvest_time=datetime.now(UTC),
            endpoint=self.endpoint,
            strategy=self.strategy,
        )

    # -- groups ------------------------------------------------------------------------

    def fetched(
        self,
        res: Resource,
        result: HttpExchange,
        outlinks: Sequence[str] | None = None,
        followed: Sequence[HttpExchange] = (),
    ) -> tuple[Capture, bool]:
        """A fresh capture of ``res``, or a revisit when the server or the digest says nothing
        changed; the flag says it was a revisit.

        ``result`` is the exchange for ``res.url`` itself; ``followed`` are the hops of the
        redirect it answered, each archived under its own URI in the same group. The capture
        returned, and the DIDL record, are ``result``'s. A crawled page also gets its outlinks
        record, after its response and request, so the DIDL record still closes the group.
        The records are built by hand (:mod:`harvester.archive.capturegroup`), or with warcio
        when an HTTP head is not ASCII.
        """
        payload = Payload.of(result.body)
        seen = _revisit_of(res, result, payload)
        if seen is not None and result.status == 304:
            payload = Payload(res.sha1 or "", res.sha256 or "", res.payload_digest or "")
            seen = replace(seen, head=self._freshened(res, result))
        stamp = self.writer.stamp
        group = capturegroup.group(stamp, result, payload.warc_digest, seen, outlinks, followed)
        if group is None:
            locations = self._written_by_warcio(res, result, payload, seen, outlinks, followed)
        else:
            then = self._didl(res, result, payload, seen, self._built_metadata)
            locations = self.writer.write_built(group, then=then)
        capture = capture_of(locations[0], result.status, result.response_headers, payload)
        if seen is not None and seen.head is not None:  # a 304 may leave validators out
            fields = seen.head.fields
            capture.etag = first_header(fields, "etag") or capture.etag
            capture.last_modified = first_header(fields, "last-modified") or capture.last_modified
        return capture, seen is not None

    def _freshened(self, res: Resource, result: HttpExchange) -> StoredHead:
        """The head a revisit of a 304 holds: the last capture's, freshened by the 304
        (:mod:`harvester.archive.storedhead`)."""
        stored = None
        if res.warc_file is not None:
            stored = stored_head(self.writer.directory, res.warc_file, res.warc_offset or 0)
        return refreshed(stored, result.response_headers)

    def _written_by_warcio(
        self,
        res: Resource,
        result: HttpExchange,
        payload: Payload,
        seen: Revisit | None,
        outlinks: Sequence[str] | None,
        followed: Sequence[HttpExchange],
    ) -> list[RecordLocation]:
        """The group as :meth:`_built` makes it, built and written by warcio."""
        content = self._response(result) if seen is None else self._revisit(result, seen)
        records = [content, self._request(result, content)]
        for hop in followed:
            hop_content = self._response(hop)
            records += [hop_content, self._request(hop, hop_content)]
        if outlinks is not None:
            records.append(self._outlinks(result, _id(content), outlinks))
        then = self._didl(res, result, payload, seen, self.writer.metadata_record)
        return self.writer.write_group(records, then=then)

    def _response(self, result: HttpExchange) -> ArcWarcRecord:
        return self.writer.response_record(
            result.url,
            _response_headers(result),
            result.body,
            ip=result.peer_ip,
            truncated=result.truncated,
        )

    def _request(self, result: HttpExchange, content: ArcWarcRecord) -> ArcWarcRecord:
        """The request of ``content``'s capture: concurrent to it, at its date (5.4)."""
        return self.writer.request_record(
            result.url,
            _request_headers(result),
            result.request_body,
            concurrent_to=_id(content),
            ip=result.peer_ip,
            date=content.rec_headers.get_header("WARC-Date"),
        )

    def _outlinks(
        self, result: HttpExchange, refers_to: str, outlinks: Sequence[str]
    ) -> ArcWarcRecord:
        """Heritrix's metadata record of a crawled URL: ``application/warc-fields`` (skipped by
        replay indexers), its fetch time (``fetchTimeMs``: request to the body's end) and its
        outlinks, one ``outlink`` field each."""
        return self.writer.metadata_record(
            capturegroup.outlink_fields(result, outlinks),
            content_type="application/warc-fields",
            refers_to=refers_to,
            target_uri=result.url,
        )

    def exchange(self, exchange: HttpExchange) -> list[RecordLocation]:
        """A raw OAI-PMH exchange (strategy didl): response + request + a closing note."""
        response = self._response(exchange)
        request = self._request(exchange, response)
        note = f"oai-exchange: {exchange.url}\r\n".encode()
        return self.writer.write_group(
            [response, request],
            then=lambda locs: [
                self.writer.metadata_record(
                    note, content_type="application/warc-fields", refers_to=locs[0].record_id
                )
            ],
        )

    def carried(
        self,
        res: Resource,
        url: str,
        mime: str,
        body: bytes,
        http_headers: list[tuple[str, str]] | None = None,
        ready: capturegroup.CarriedBody | None = None,
        page: HttpExchange | None = None,
    ) -> tuple[Capture, bool]:
        """A resource delivered by value inside an ``oai_didl`` record of the list page
        ``page`` (:mod:`harvester.archive.carriedgroup`); with the headers the provider
        reports for a 200 of it, a response record carrying them, or a revisit when its
        payload is the last capture's; the flag says it was a revisit. ``ready`` is
        :func:`~harvester.archive.capturegroup.carried_body` of ``body`` and ``http_headers``
        when the caller made it already. The records are built by hand, or with warcio when
        a head is not ASCII."""
        headers = http_headers or [("Content-Type", mime), ("Content-Length", str(len(body)))]
        fake = CarriedExchange(
            url=url,
            status=200,
            reason="OK",
            protocol="HTTP/1.1",
            response_headers=headers,
            body=body,
            truncated=None,
            record_type="response" if http_headers else "resource",
            peer_ip=page.peer_ip if page else None,
            source_uri=page.url if page else None,
        )
        ready = ready or capturegroup.carried_body(body, http_headers)
        payload = ready.payload if ready else Payload.of(body)
        seen = _revisit_of(res, fake, payload) if http_headers else None
        built = None
        if seen is not None:
            built = carriedgroup.revisit_group(self.writer.stamp, fake, seen)
        elif ready is not None:
            built = carriedgroup.group(self.writer.stamp, fake, mime, http_headers, ready)
        if built is None:
            seen = None
            locations = self._carried_by_warcio(res, fake, mime, payload)
        else:
            then = self._didl(res, fake, payload, seen, self._built_metadata)
            locations = self.writer.write_built(built, then=then)
        capture = capture_of(locations[0], fake.status, fake.response_headers, payload)
        return capture, seen is not None

    def _carried_by_warcio(
        self, res: Resource, fake: CarriedExchange, mime: str, payload: Payload
    ) -> list[RecordLocation]:
        """The group of :meth:`carried`, a full record and its note, made by warcio."""
        if fake.record_type == "response":
            record = self.writer.response_record(
                fake.url, _response_headers(fake), fake.body, ip=fake.peer_ip
            )
        else:
            ip = {"WARC-IP-Address": fake.peer_ip} if fake.peer_ip else None
            record = self.writer.resource_record(fake.url, mime, fake.body, extra=ip)
        note = self.writer.metadata_record(
            carriedgroup.note_fields(fake, fake.record_type == "response"),
            content_type=carriedgroup.NOTE_TYPE,
            target_uri=fake.url,
            extra={
                "WARC-Concurrent-To": _id(record),
                "WARC-Date": record.rec_headers.get_header("WARC-Date"),
            },
        )
        then = self._didl(res, fake, payload, None, self.writer.metadata_record)
        return self.writer.write_group([record, note], then=then)

    def deleted(self, res: Resource) -> RecordLocation:
        didl = deletion_document(res, self.writer.directory, self.provenance())
        record = self.writer.metadata_record(didl, refers_to=res.record_id)
        return self.writer.write_group([record])[0]

    def _revisit(self, result: HttpExchange, seen: Revisit) -> ArcWarcRecord:
        head = seen.head or capturegroup.revisit_head(result)
        http = StatusAndHeaders(head.status, list(head.fields), protocol=head.protocol)
        return self.writer.revisit_record(result.url, http, seen, result.peer_ip)

    def _didl(
        self,
        res: Resource,
        result: HttpExchange | CarriedExchange,
        payload: Payload,
        seen: Revisit | None,
        metadata: Callable[..., R],
    ) -> Callable[[list[RecordLocation]], list[R]]:
        """The ``then`` of a group's write: the DIDL record closing the group, made by
        ``metadata`` (a record built by hand, or warcio's) once the group's first record has
        landed, which it describes and refers to."""

        def closing(locations: list[RecordLocation]) -> list[R]:
            at = locations[0]
            identified: list[str] = []
            if self.identifier is not None and 200 <= result.status < 300:
                declared = first_header(result.response_headers, "content-type")
                identified = self._identified(result, payload, declared)
            didl = capture_document(res, result, payload, at, seen, self.provenance(), identified)
            return [metadata(didl, refers_to=at.record_id)]

        return closing

    def _built_metadata(self, didl: bytes, *, refers_to: str) -> Built:
        return capturegroup.metadata(self.writer.stamp, didl, refers_to=refers_to)

    def _identified(
        self, result: HttpExchange | CarriedExchange, payload: Payload, declared: str | None
    ) -> list[str]:
        if self.identifier is None:
            raise ArchiveError("a payload to identify with --identify off")
        body = payload_of(result.body, first_header(result.response_headers, "content-encoding"))
        runs = self.identifier.identify(body, result.url, payload.sha256, datetime.now(UTC))
        mime = (declared or "").partition(";")[0].strip() or FALLBACK_MIME
        return statements(result.url, payload.sha1, payload.sha256, len(result.body), mime, runs)

    # -- after a crash -----------------------------------------------------------------

    def reconcile(self, repaired: Sequence[Path]) -> list[tuple[str, Capture]]:
        """Captures in repaired files whose group is complete: (url, capture) pairs
        (:func:`harvester.archive.recovery.recovered`); the caller marks those URLs archived
        if the state had not yet."""
        return recovered(repaired)


def _revisit_of(
    res: Resource, result: HttpExchange | CarriedExchange, payload: Payload
) -> Revisit | None:
    """What the content record revisits: ``res``'s last capture, when the server says 304 or
    the payload is that capture's; None for a new capture."""
    if not res.record_id:
        return None
    # A 304 is recorded as what it says: the payload stored is the resource's still. Its
    # revisit holds the freshened 200 head (docs/collection.md says why this profile).
    if result.status != 304 and res.payload_digest != payload.warc_digest:
        return None
    profile = "identical-payload-digest"
    return Revisit(profile, res.record_id, res.url, res.warc_date or "", res.payload_digest or "")


def _id(record: ArcWarcRecord) -> str:
    return str(record.rec_headers.get_header("WARC-Record-ID"))


def _response_headers(result: HttpExchange | CarriedExchange) -> StatusAndHeaders:
    headers = [(k, v) for k, v in result.response_headers if k.lower() not in HOP_BY_HOP]
    return StatusAndHeaders(f"{result.status} {result.reason}", headers, protocol=result.protocol)


def _request_headers(result: HttpExchange) -> StatusAndHeaders:
    return StatusAndHeaders(result.request_line, list(result.request_headers), is_http_request=True)
