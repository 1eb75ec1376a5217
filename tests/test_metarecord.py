"""Metadata records built by hand are the records warcio's builder and writer make."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.archive.repair import verify_warc
from harvester.archive.warc import RecordLocation, RotatingWARCWriter
from tests.fixedwriter import fixed_writer

PAYLOADS = [
    b"<didl/>",
    "<didl>\u00e9t\u00e9 \U0001f600</didl>".encode(),
    b"<didl>" + bytes(range(256)) * 400 + b"</didl>",  # larger than zlib's window
    b"",
]


def members(path: Path, locations: list[RecordLocation]) -> list[bytes]:
    data = path.read_bytes()
    return [gzip.decompress(data[at.offset : at.offset + at.length]) for at in locations]


def test_hand_built_group_is_byte_for_byte_warcios(tmp_path: Path) -> None:
    ours, warcio = fixed_writer(tmp_path / "ours"), fixed_writer(tmp_path / "warcio")
    ours.write_metadata_group([b"<first/>"])  # each file's warcinfo takes one ID
    warcio.write_group([warcio.metadata_record(b"<first/>")])
    built = ours.write_metadata_group(PAYLOADS)
    made = warcio.write_group([warcio.metadata_record(p) for p in PAYLOADS])
    ours_path, warcio_path = ours.current_path, warcio.current_path
    assert ours_path is not None and warcio_path is not None
    assert members(ours_path, built) == members(warcio_path, made)
    assert [(a.record_id, a.warc_date) for a in built] == [(b.record_id, b.warc_date) for b in made]
    ours.close()
    for path in (tmp_path / "ours").glob("*.warc.gz"):
        verify_warc(path)
        with path.open("rb") as fh:
            bodies = [r.content_stream().read() for r in ArchiveIterator(fh)][1:]
        assert bodies == [b"<first/>", *PAYLOADS]


def test_each_record_reads_from_its_own_offset(tmp_path: Path) -> None:
    ours = fixed_writer(tmp_path)
    built = ours.write_metadata_group(PAYLOADS) + ours.write_metadata_group([b"<m/>"])
    path = ours.current_path
    assert path is not None
    with path.open("rb") as fh:
        for at, payload in zip(built, [*PAYLOADS, b"<m/>"], strict=True):
            fh.seek(at.offset)
            record = next(iter(ArchiveIterator(fh)))
            assert record.rec_headers.get_header("WARC-Record-ID") == at.record_id
            assert record.content_stream().read() == payload


def test_a_closed_writer_refuses(tmp_path: Path) -> None:
    closed = RotatingWARCWriter(tmp_path)
    with pytest.raises(Exception, match="not open"):
        closed.write_metadata_group([b"<m/>"])
