"""A capture's or a deletion's DIDL document, from what the recorder knows of it.

The document (:mod:`harvester.archive.didl`) states the answer as received (a 304's head
included: the WARC record holds the head it freshens, :mod:`harvester.archive.storedhead`),
the record holding the capture by its real WARC-Type (``response``, ``resource`` or
``revisit``), and, for ``pres:mimeType`` and the component, the MIME type of the payload that
record stands for: a revisit of a 304 takes it from the stored head.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from harvester.archive.capturegroup import Payload
from harvester.archive.carriedgroup import CarriedExchange
from harvester.archive.didl import (
    CaptureDescription,
    OaiHeaderInfo,
    Provenance,
    WarcPointer,
    capture_didl,
    deletion_didl,
    sniff_mime,
)
from harvester.archive.records import Revisit
from harvester.archive.storedhead import stored_type
from harvester.archive.warc import RecordLocation
from harvester.http.exchange import HttpExchange, first_header
from harvester.storage.protocol import Resource

__all__ = ["capture_document", "deletion_document", "oai_info"]


def capture_document(
    res: Resource,
    result: HttpExchange | CarriedExchange,
    payload: Payload,
    at: RecordLocation,
    seen: Revisit | None,
    provenance: Provenance,
    identified: Sequence[str] = (),
) -> bytes:
    """The DIDL of ``result``'s capture, held by the record at ``at`` (a revisit of ``seen``
    when given), with the payload's format identification statements when given."""
    kind = result.record_type if isinstance(result, CarriedExchange) else "response"
    kind = "revisit" if seen is not None else kind
    declared = first_header(result.response_headers, "content-type")
    if seen is not None and seen.head is not None:
        declared = first_header(seen.head.fields, "content-type")
    desc = CaptureDescription(
        url=result.url,
        status=result.status,
        reason=result.reason,
        protocol=result.protocol,
        headers=result.response_headers,
        sha1=payload.sha1,
        sha256=payload.sha256,
        declared_mime=declared,
        sniffed_mime=sniff_mime(result.body, result.url) if result.body else None,
        warc=WarcPointer(at.record_id, at.filename, at.offset, at.length, kind, result.truncated),
        oai=oai_info(res, provenance.endpoint),
        provenance=provenance,
        identified=identified,
    )
    return capture_didl(desc)


def deletion_document(res: Resource, warcs: Path, provenance: Provenance) -> bytes:
    """The DIDL saying ``res`` was found deleted; its last capture's record, read in
    ``warcs`` for its type, is named."""
    previous = None
    if res.record_id and res.warc_file is not None:
        offset = res.warc_offset or 0
        kind = stored_type(warcs, res.warc_file, offset) or "response"
        previous = WarcPointer(res.record_id, res.warc_file, offset, res.warc_length or 0, kind)
    return deletion_didl(
        res.url,
        observed=datetime.now(UTC),
        oai=oai_info(res, provenance.endpoint, deleted=True),
        provenance=provenance,
        previous=previous,
    )


def oai_info(res: Resource, endpoint: str | None, deleted: bool = False) -> OaiHeaderInfo | None:
    """The OAI-PMH header ``res`` was listed with, if it was."""
    if res.oai_identifier is None:
        return None
    return OaiHeaderInfo(
        identifier=res.oai_identifier,
        datestamp=res.listed_datestamp or "",
        set_specs=res.set_specs,
        endpoint=endpoint,
        deleted=deleted,
    )
