"""An OAI-PMH exchange's records built by hand are the records warcio's builder and writer make."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.archive.capturegroup import exchange_group
from harvester.archive.recorder import Recorder
from harvester.archive.repair import verify_warc
from harvester.archive.warc import RecordLocation
from harvester.http.exchange import HttpExchange
from tests.fixedwriter import MOMENT, fixed_writer

URL = "http://127.0.0.1:8080/oai?verb=ListRecords&resumptionToken=a%2Fb"
PAGE = b'<?xml version="1.0"?><OAI-PMH><ListRecords>' + b"<record/>" * 5000 + b"</ListRecords>"


def exchange(**changed: object) -> HttpExchange:
    made = HttpExchange(
        url=URL,
        method="GET",
        protocol="HTTP/1.1",
        status=200,
        reason="OK",
        request_headers=(("User-Agent", "coop-archive"), ("Accept-Encoding", "gzip, deflate")),
        response_headers=(
            ("Content-Type", "text/xml; charset=utf-8"),
            ("Transfer-Encoding", "chunked"),
            ("Connection", "keep-alive"),
            ("Date", "Wed, 01 May 2024 12:00:00 GMT"),
        ),
        body=PAGE,
        started=MOMENT,
        peer_ip="127.0.0.1",
    )
    return replace(made, **changed)  # type: ignore[arg-type]


EXCHANGES = [
    exchange(),
    exchange(body=b"", reason="", peer_ip=None),
    exchange(protocol="HTTP/1.0", status=503, reason="Busy", truncated="length", body=b"<x/>"),
    exchange(peer_ip=None, truncated="time"),
]


def members(path: Path, locations: list[RecordLocation]) -> list[bytes]:
    data = path.read_bytes()
    return [gzip.decompress(data[at.offset : at.offset + at.length]) for at in locations]


def without_place(line: str) -> tuple[str, str, dict[str, str]]:
    key, stamp, block = line.split(" ", 2)
    fields = json.loads(block)
    return key, stamp, {k: v for k, v in fields.items() if k not in ("offset", "length")}


def place(line: str) -> tuple[int, int]:
    fields = json.loads(line.split(" ", 2)[2])
    return int(fields["offset"]), int(fields["length"])


def test_hand_built_exchange_is_byte_for_byte_warcios(tmp_path: Path) -> None:
    our_lines: list[str] = []
    warcio_lines: list[str] = []
    placed: list[RecordLocation] = []
    ours = fixed_writer(tmp_path / "ours", our_lines)
    warcio = fixed_writer(tmp_path / "warcio", warcio_lines)
    recorder = Recorder(warcio, strategy="oai-records", endpoint=URL)
    ours.write_metadata_group([b"<first/>"])  # each file's warcinfo takes one ID
    warcio.write_group([warcio.metadata_record(b"<first/>")])
    for each in EXCHANGES:
        made = recorder.exchange(each)
        built = exchange_group(ours.stamp, each)
        assert built is not None
        written = ours.write_built(built)
        ours_path, warcio_path = ours.current_path, warcio.current_path
        assert ours_path is not None and warcio_path is not None
        assert members(ours_path, written) == members(warcio_path, made)
        assert [(a.record_id, a.warc_date) for a in written] == [
            (b.record_id, b.warc_date) for b in made
        ]
        placed.append(written[0])
    ours.close()
    warcio.close()
    # The same lines but where each member is: deflate's window is sized to the record.
    assert [without_place(line) for line in our_lines] == [
        without_place(line) for line in warcio_lines
    ]
    assert [place(line) for line in our_lines] == [(at.offset, at.length) for at in placed]
    for path in (tmp_path / "ours").glob("*.warc.gz"):
        verify_warc(path)
        with path.open("rb") as fh:
            bodies = [
                r.content_stream().read() for r in ArchiveIterator(fh) if r.rec_type == "response"
            ]
        assert bodies == [each.body for each in EXCHANGES]


@pytest.mark.parametrize(
    "changed",
    [
        {"response_headers": (("Content-Disposition", "attachment; filename=\u00e9t\u00e9.xml"),)},
        {"request_headers": (("From", "\u00e9t\u00e9@example.org"),)},
    ],
)
def test_a_field_that_is_not_ascii_is_left_to_warcio(changed: dict[str, object]) -> None:
    """warcio percent-encodes such fields (RFC 8187); the hand-built path does not try."""
    assert exchange_group(iter([("<a>", "d")] * 3).__next__, exchange(**changed)) is None
