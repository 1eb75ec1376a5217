"""After a crash: the captures whose record group reached the disk whole.

:func:`~harvester.archive.repair.repair_open_files` cuts a ``.open`` file back to the last
record that ends a group (:func:`ends_group`); :func:`recovered` then reads the repaired files
for the groups the state may never have heard of, and :func:`reconcile` tells the state of
them: the next harvest does both, and so does a command that reads an interrupted collection
(:mod:`harvester.collection.interruption`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from harvester.archive.capturegroup import Payload
from harvester.archive.warc import RecordLocation
from harvester.http.exchange import Header, first_header
from harvester.storage.protocol import Capture, State

__all__ = ["capture_of", "ends_group", "reconcile", "recovered"]

log = logging.getLogger(__name__)


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


def recovered(repaired: Sequence[Path]) -> list[tuple[str, Capture]]:
    """Captures in repaired files whose group is complete: (url, capture) pairs.

    A group is complete when its closing record (the DIDL record, which refers to the
    content record) made it to disk.
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


def reconcile(
    state: State, site_url: str, found: Sequence[tuple[str, Capture]], *, archive: bool
) -> int:
    """Tell the state of the captures :func:`recovered` found; return how many it learnt.

    On the OAI-PMH path they count as archived. A crawl fetches such a page again, to
    queue its links; the capture's digests are remembered so the refetch becomes a
    revisit, but not its validators: a conditional request would be answered 304, with
    no body to take the links from, and the page's links would never be queued. A crawl
    commits its pages in batches, so such a page may have no row yet (the step that
    queued it was not committed either): it gets a pending one, so that when its link is
    found again, the refetch is a revisit too.
    """
    known = state.known_record_ids(c.record_id for _u, c in found)
    if not archive:
        fresh = [u for u, c in found if c.record_id not in known]
        state.add_pending(site_url, fresh)
    learnt = 0
    for url, capture in found:
        res = state.get(url)
        if capture.record_id in known or res is None or res.status != "pending":
            continue
        if archive:
            state.mark_archived(url, capture, None)
        else:
            state.remember_capture(url, replace(capture, etag=None, last_modified=None))
        learnt += 1
        log.info("recovered the capture of %s from %s", url, capture.warc_file)
    return learnt


def _recovered(
    filename: str, record: ArcWarcRecord, offset: int, length: int, payload: Payload
) -> tuple[str, Capture]:
    rec, http = record.rec_headers, record.http_headers
    at = RecordLocation(
        rec.get_header("WARC-Record-ID"), filename, offset, length, rec.get_header("WARC-Date")
    )
    status, fields = (int(http.get_statuscode()), http.headers) if http else (200, [])
    return rec.get_header("WARC-Target-URI"), capture_of(at, status, fields, payload)


def capture_of(
    at: RecordLocation, status: int, fields: Sequence[Header], payload: Payload
) -> Capture:
    """What the state keeps of a capture (its record ``at``, the answer's status and validators
    among its ``fields``, the payload's digests): as the recorder writes it, as found here."""
    return Capture(
        record_id=at.record_id,
        warc_file=at.filename,
        warc_offset=at.offset,
        warc_length=at.length,
        warc_date=at.warc_date,
        http_status=status,
        etag=first_header(fields, "etag"),
        last_modified=first_header(fields, "last-modified"),
        payload_digest=payload.warc_digest,
        sha1=payload.sha1,
        sha256=payload.sha256,
    )
