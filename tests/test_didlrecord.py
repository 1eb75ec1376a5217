"""A deletion's DIDL names the last capture's record by its real type (issue 32, item 2).

A resource archived, then found unchanged (a revisit), then deleted: the deletion record's
``pres:warcRecord`` is the revisit, and says ``type="revisit"``, read from the WARC file.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from lxml import etree
from warcio.archiveiterator import ArchiveIterator

from harvester.archive.didl import PRES_NS
from harvester.archive.recorder import Recorder
from harvester.archive.warc import RotatingWARCWriter
from harvester.http.exchange import HttpExchange
from harvester.storage.protocol import Resource
from harvester.storage.sqlite.state import SQLiteState

URL = "http://127.0.0.1/page.html"


def exchange(body: bytes) -> HttpExchange:
    return HttpExchange(
        url=URL,
        method="GET",
        protocol="HTTP/1.1",
        status=200,
        reason="OK",
        request_headers=(("Host", "127.0.0.1"),),
        response_headers=(("Content-Type", "text/html"), ("Content-Length", str(len(body)))),
        body=body,
        started=datetime.now(UTC),
        peer_ip="127.0.0.1",
    )


def test_a_deletion_names_a_revisit_as_a_revisit(tmp_path: Path) -> None:
    with SQLiteState(tmp_path / "state.sqlite") as state:
        state.add_pending("http://127.0.0.1/", [URL])
        res = state.get(URL)
    assert res is not None
    writer = RotatingWARCWriter(tmp_path / "warcs", prefix="t")
    writer.open()
    recorder = Recorder(writer, strategy="oai-get", endpoint=None)
    first, _ = recorder.fetched(res, exchange(b"<p>same</p>"))
    res = _after(res, first)
    second, unchanged = recorder.fetched(res, exchange(b"<p>same</p>"))
    assert unchanged
    recorder.deleted(_after(res, second))
    writer.close()
    (path,) = (tmp_path / "warcs").glob("*.warc.gz")
    with open(path, "rb") as fh:
        blocks = [
            r.content_stream().read() for r in ArchiveIterator(fh) if r.rec_type == "metadata"
        ]
    deletion = etree.fromstring(blocks[-1])
    (pointer,) = deletion.iterfind(f".//{{{PRES_NS}}}warcRecord")
    assert (pointer.get("recordId"), pointer.get("type")) == (second.record_id, "revisit")


def _after(res: Resource, capture) -> Resource:  # type: ignore[no-untyped-def]
    return replace(
        res,
        record_id=capture.record_id,
        warc_file=capture.warc_file,
        warc_offset=capture.warc_offset,
        warc_length=capture.warc_length,
        warc_date=capture.warc_date,
        payload_digest=capture.payload_digest,
        sha1=capture.sha1,
        sha256=capture.sha256,
    )
