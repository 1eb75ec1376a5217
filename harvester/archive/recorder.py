"""The recorder: turns captures into WARC record groups, each closed by its DIDL record.

One group per resource, written into one file in one flush:

* fetched: ``response`` + ``request`` (WARC-Concurrent-To); then, for a listed URL that
  redirects, the ``response`` + ``request`` of every hop followed, each under its own URI; then
  a crawled URL's ``metadata`` (its fetch time and outlinks); then the DIDL ``metadata``;
* unchanged (a 304, or the same payload digest): ``revisit`` + ``request``, then the DIDL;
* carried by value in an ``oai_didl`` record: ``response`` with the provider's own headers
  from the DIDL's ``http_header`` descriptor (so replay serves its Last-Modified and ETag, and
  the next run's conditional GET sends them), or ``resource`` when it has none; then the DIDL;
* deleted: one DIDL ``metadata`` record saying so.

Every group ends with a ``metadata`` record without a WARC-Target-URI (a DIDL record, or the
note closing an OAI-PMH exchange), and no other record of a group is one: the outlinks record
names its page. Crash repair, given :func:`ends_group`, cuts a ``.open`` file back to the last
such record, so it never leaves half a group; :meth:`Recorder.reconcile` then finds groups that
reached the disk before the state heard of them.

Every record is made from one :class:`~harvester.exchange.HttpExchange`, whichever client made
it, so the HTTP version is spelled one way in every request and status line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from harvester import __version__
from harvester.archive import capturegroup
from harvester.archive.capturegroup import HOP_BY_HOP, Payload, Revisit
from harvester.archive.didl import (
    CaptureDescription,
    OaiHeaderInfo,
    Provenance,
    WarcPointer,
    capture_didl,
    deletion_didl,
    sniff_mime,
)
from harvester.archive.recordbytes import Built
from harvester.archive.recovery import ends_group, recovered
from harvester.archive.warc import RecordLocation, RotatingWARCWriter
from harvester.exchange import HttpExchange
from harvester.storage.protocol import Capture, Resource

__all__ = ["Payload", "Recorder", "conditional_headers", "ends_group"]

log = logging.getLogger(__name__)


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
    def __init__(self, writer: RotatingWARCWriter, *, strategy: str, endpoint: str | None) -> None:
        self.writer = writer
        self.strategy = strategy
        self.endpoint = endpoint

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
        if seen is not None and seen.profile == "server-not-modified":
            payload = Payload(res.sha1 or "", res.sha256 or "", res.payload_digest or "")
        stamp = self.writer.stamp
        group = capturegroup.group(stamp, result, payload.warc_digest, seen, outlinks, followed)
        if group is None:
            locations = self._written_by_warcio(res, result, payload, seen, outlinks, followed)
        else:
            locations = self.writer.write_built(
                group, then=lambda locs: [self._built_didl(res, result, payload, locs[0])]
            )
        return _capture(locations[0], result, payload), seen is not None

    def _built_didl(
        self, res: Resource, result: HttpExchange | _Carried, payload: Payload, at: RecordLocation
    ) -> Built:
        didl = self._didl_document(res, result, payload, at)
        return capturegroup.metadata(self.writer.stamp, didl, refers_to=at.record_id)

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
        records = [content, self._request(result, _id(content))]
        for hop in followed:
            hop_content = self._response(hop)
            records += [hop_content, self._request(hop, _id(hop_content))]
        if outlinks is not None:
            records.append(self._outlinks(result, _id(content), outlinks))
        return self.writer.write_group(
            records, then=lambda locs: [self._didl(res, result, payload, locs[0])]
        )

    def _response(self, result: HttpExchange) -> ArcWarcRecord:
        return self.writer.response_record(
            result.url,
            _response_headers(result),
            result.body,
            ip=result.peer_ip,
            truncated=result.truncated,
        )

    def _request(self, result: HttpExchange, concurrent_to: str) -> ArcWarcRecord:
        return self.writer.request_record(
            result.url,
            _request_headers(result),
            result.request_body,
            concurrent_to=concurrent_to,
            ip=result.peer_ip,
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
        request = self._request(exchange, _id(response))
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
    ) -> Capture:
        """A resource delivered by value inside an ``oai_didl`` record; with the headers the
        provider reports for a 200 of it, a response record carrying them. ``ready`` is
        :func:`~harvester.archive.capturegroup.carried_body` of ``body`` and ``http_headers``
        when the caller made it already. The record is built by hand, or with warcio when a
        head is not ASCII."""
        headers = http_headers or [("Content-Type", mime), ("Content-Length", str(len(body)))]
        fake = _Carried(
            url=url,
            status=200,
            reason="OK",
            protocol="HTTP/1.1",
            response_headers=headers,
            body=body,
            truncated=None,
            record_type="response" if http_headers else "resource",
        )
        ready = ready or capturegroup.carried_body(body, http_headers)
        built = None
        if ready is not None:
            built = capturegroup.carried(self.writer.stamp, url, mime, http_headers, ready)
        if ready is not None and built is not None:
            payload = ready.payload
            locations = self.writer.write_built(
                [built], then=lambda locs: [self._built_didl(res, fake, payload, locs[0])]
            )
            return _capture(locations[0], fake, payload)
        payload = ready.payload if ready else Payload.of(body)
        if http_headers:
            record = self.writer.response_record(url, _response_headers(fake), body)
        else:
            record = self.writer.resource_record(url, mime, body)
        locations = self.writer.write_group(
            [record], then=lambda locs: [self._didl(res, fake, payload, locs[0])]
        )
        return _capture(locations[0], fake, payload)

    def deleted(self, res: Resource) -> RecordLocation:
        previous = None
        if res.record_id and res.warc_file is not None:
            previous = WarcPointer(
                res.record_id, res.warc_file, res.warc_offset or 0, res.warc_length or 0, "response"
            )
        didl = deletion_didl(
            res.url,
            observed=datetime.now(UTC),
            oai=_oai_info(res, self.endpoint, deleted=True),
            provenance=self.provenance(),
            previous=previous,
        )
        record = self.writer.metadata_record(didl, refers_to=res.record_id)
        return self.writer.write_group([record])[0]

    def _revisit(self, result: HttpExchange, seen: Revisit) -> ArcWarcRecord:
        return self.writer.revisit_record(
            result.url,
            _response_headers(result),
            refers_to_uri=seen.refers_to_uri,
            refers_to_date=seen.refers_to_date,
            payload_digest=seen.payload_digest,
            profile=seen.profile,
            refers_to=seen.refers_to,
        )

    def _didl(
        self, res: Resource, result: HttpExchange | _Carried, payload: Payload, at: RecordLocation
    ) -> ArcWarcRecord:
        didl = self._didl_document(res, result, payload, at)
        return self.writer.metadata_record(didl, refers_to=at.record_id)

    def _didl_document(
        self, res: Resource, result: HttpExchange | _Carried, payload: Payload, at: RecordLocation
    ) -> bytes:
        kind = result.record_type if isinstance(result, _Carried) else "response"
        desc = CaptureDescription(
            url=result.url,
            status=result.status,
            reason=result.reason,
            protocol=result.protocol,
            headers=result.response_headers,
            sha1=payload.sha1,
            sha256=payload.sha256,
            declared_mime=_header(result.response_headers, "content-type"),
            sniffed_mime=sniff_mime(result.body, result.url) if result.body else None,
            warc=WarcPointer(
                at.record_id, at.filename, at.offset, at.length, kind, result.truncated
            ),
            oai=_oai_info(res, self.endpoint),
            provenance=self.provenance(),
        )
        return capture_didl(desc)

    # -- after a crash -----------------------------------------------------------------

    def reconcile(self, repaired: Sequence[Path]) -> list[tuple[str, Capture]]:
        """Captures in repaired files whose group is complete: (url, capture) pairs
        (:func:`harvester.archive.recovery.recovered`); the caller marks those URLs archived
        if the state had not yet."""
        return recovered(repaired)


@dataclass(frozen=True)
class _Carried:
    """The parts of an HttpExchange that a by-value resource also has."""

    url: str
    status: int
    reason: str
    protocol: str
    response_headers: list[tuple[str, str]]
    body: bytes
    truncated: str | None
    record_type: str  # response (with the provider's headers) or resource


def _revisit_of(res: Resource, result: HttpExchange, payload: Payload) -> Revisit | None:
    """What the content record revisits: ``res``'s last capture, when the server says 304 or
    the payload is that capture's; None for a new capture."""
    if not res.record_id:
        return None
    if result.status == 304:
        profile = "server-not-modified"
    elif res.payload_digest == payload.warc_digest:
        profile = "identical-payload-digest"
    else:
        return None
    return Revisit(profile, res.record_id, res.url, res.warc_date or "", res.payload_digest or "")


def _id(record: ArcWarcRecord) -> str:
    return str(record.rec_headers.get_header("WARC-Record-ID"))


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def _response_headers(result: HttpExchange | _Carried) -> StatusAndHeaders:
    headers = [(k, v) for k, v in result.response_headers if k.lower() not in HOP_BY_HOP]
    return StatusAndHeaders(f"{result.status} {result.reason}", headers, protocol=result.protocol)


def _request_headers(result: HttpExchange) -> StatusAndHeaders:
    return StatusAndHeaders(result.request_line, list(result.request_headers), is_http_request=True)


def _oai_info(res: Resource, endpoint: str | None, deleted: bool = False) -> OaiHeaderInfo | None:
    if res.oai_identifier is None:
        return None
    return OaiHeaderInfo(
        identifier=res.oai_identifier,
        datestamp=res.listed_datestamp or "",
        set_specs=res.set_specs,
        endpoint=endpoint,
        deleted=deleted,
    )


def _capture(at: RecordLocation, result: HttpExchange | _Carried, payload: Payload) -> Capture:
    return Capture(
        record_id=at.record_id,
        warc_file=at.filename,
        warc_offset=at.offset,
        warc_length=at.length,
        warc_date=at.warc_date,
        http_status=result.status,
        etag=_header(result.response_headers, "etag"),
        last_modified=_header(result.response_headers, "last-modified"),
        payload_digest=payload.warc_digest,
        sha1=payload.sha1,
        sha256=payload.sha256,
    )
