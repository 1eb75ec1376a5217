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

import base64
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from harvester import __version__
from harvester.archive.didl import (
    CaptureDescription,
    OaiHeaderInfo,
    Provenance,
    WarcPointer,
    capture_didl,
    deletion_didl,
    sniff_mime,
)
from harvester.archive.warc import RecordLocation, RotatingWARCWriter
from harvester.exchange import HttpExchange
from harvester.storage.protocol import Capture, Resource

log = logging.getLogger(__name__)
HOP_BY_HOP = {"transfer-encoding", "connection", "keep-alive"}


@dataclass(frozen=True)
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
            "sha1:" + base64.b32encode(sha1.digest()).decode("ascii"),
        )


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
        """
        content, payload = self._content(res, result)
        request = self._request(result, _id(content))
        records = [content, request]
        for hop in followed:
            hop_content = self._response(hop)
            records += [hop_content, self._request(hop, _id(hop_content))]
        if outlinks is not None:
            records.append(self._outlinks(result, _id(content), outlinks))
        locations = self.writer.write_group(
            records, then=lambda locs: [self._didl(res, result, payload, locs[0])]
        )
        unchanged = content.rec_type == "revisit"
        return _capture(locations[0], result, payload), unchanged

    def _content(self, res: Resource, result: HttpExchange) -> tuple[ArcWarcRecord, Payload]:
        """The content record and its payload: a revisit when ``res``'s last capture has the
        same payload or the server says 304 (then the payload is the last capture's)."""
        payload = Payload.of(result.body)
        if res.record_id and result.status == 304:
            last = Payload(res.sha1 or "", res.sha256 or "", res.payload_digest or "")
            return self._revisit(res, result, "server-not-modified"), last
        if res.record_id and res.payload_digest == payload.warc_digest:
            return self._revisit(res, result, "identical-payload-digest"), payload
        return self._response(result), payload

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
            result.url, _request_headers(result), concurrent_to=concurrent_to, ip=result.peer_ip
        )

    def _outlinks(
        self, result: HttpExchange, refers_to: str, outlinks: Sequence[str]
    ) -> ArcWarcRecord:
        """Heritrix's metadata record of a crawled URL: ``application/warc-fields`` (skipped by
        replay indexers), its fetch time (``fetchTimeMs``: request to the body's end) and its
        outlinks, one ``outlink`` field each."""
        fields = [f"fetchTimeMs: {round(result.elapsed * 1000)}\r\n"]
        fields += [f"outlink: {link}\r\n" for link in outlinks]
        return self.writer.metadata_record(
            "".join(fields).encode("utf-8"),
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
    ) -> Capture:
        """A resource delivered by value inside an ``oai_didl`` record; with the headers the
        provider reports for a 200 of it, a response record carrying them."""
        payload = Payload.of(body)
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

    def _revisit(self, res: Resource, result: HttpExchange, profile: str) -> ArcWarcRecord:
        return self.writer.revisit_record(
            result.url,
            _response_headers(result),
            refers_to_uri=res.url,
            refers_to_date=res.warc_date or "",
            payload_digest=res.payload_digest or "",
            profile=profile,
            refers_to=res.record_id,
        )

    def _didl(
        self, res: Resource, result: HttpExchange | _Carried, payload: Payload, at: RecordLocation
    ) -> ArcWarcRecord:
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
        return self.writer.metadata_record(capture_didl(desc), refers_to=at.record_id)

    # -- after a crash -----------------------------------------------------------------

    def reconcile(self, repaired: Sequence[Path]) -> list[tuple[str, Capture]]:
        """Captures in repaired files whose group is complete: (url, capture) pairs.

        A group is complete when its closing record (the DIDL record, which refers to the
        content record) made it to disk; the caller marks those URLs archived if the state
        had not yet.
        """
        found: list[tuple[str, Capture]] = []
        for path in repaired:
            content: dict[str, tuple[ArcWarcRecord, int, int, Payload]] = {}
            with open(path, "rb") as fh:
                it = ArchiveIterator(fh)
                for record in it:
                    kind = record.rec_type
                    rid = record.rec_headers.get_header("WARC-Record-ID")
                    body = record.raw_stream.read()
                    offset, length = it.get_record_offset(), it.get_record_length()
                    if kind in ("response", "resource"):
                        content[rid] = (record, offset, length, Payload.of(body))
                    elif ends_group({k.lower(): v for k, v in record.rec_headers.headers}):
                        ref = record.rec_headers.get_header("WARC-Refers-To")
                        if ref in content:
                            found.append(_recovered(path.name, *content[ref]))
        return found


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


def ends_group(fields: Mapping[str, str]) -> bool:
    """Whether the record with these WARC header fields (names lower-cased) closes a group.

    >>> ends_group({"warc-type": "metadata", "content-type": "application/xml"})
    True
    >>> ends_group({"warc-type": "metadata", "warc-target-uri": "http://h/"})  # outlinks
    False
    >>> ends_group({"warc-type": "response", "warc-target-uri": "http://h/"})
    False
    """
    return fields.get("warc-type") == "metadata" and not fields.get("warc-target-uri")


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


def _recovered(
    filename: str, record: ArcWarcRecord, offset: int, length: int, payload: Payload
) -> tuple[str, Capture]:
    rec, http = record.rec_headers, record.http_headers
    return rec.get_header("WARC-Target-URI"), Capture(
        record_id=rec.get_header("WARC-Record-ID"),
        warc_file=filename,
        warc_offset=offset,
        warc_length=length,
        warc_date=rec.get_header("WARC-Date"),
        http_status=int(http.get_statuscode()) if http else 200,
        etag=http.get_header("ETag") if http else None,
        last_modified=http.get_header("Last-Modified") if http else None,
        payload_digest=payload.warc_digest,
        sha1=payload.sha1,
        sha256=payload.sha256,
    )
