"""Tests for harvester.archive.warc: records read back with warcio, rotation, crash repair."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from random import Random

import pytest
from cdxj_indexer.main import write_cdx_index
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import BufferWARCWriter

from harvester.archive.records import Revisit
from harvester.archive.repair import _READ_SIZE, repair_open_files, verify_warc
from harvester.archive.warc import RecordLocation, RotatingWARCWriter
from harvester.exceptions import ArchiveError

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
WARCINFO = {
    "software": "coop-archive/0.1.0",
    "hostname": "example-host",
    "robots": "obey",
    "isPartOf": "test-collection",
}
NAME_RE = re.compile(r"^harvest-\d{20}-\d{5}-\d+\.warc\.gz$")


# -- helpers ------------------------------------------------------------------------------


def fixed_clock() -> datetime:
    return START


def stepping_clock() -> Callable[[], datetime]:
    ticks = itertools.count()
    return lambda: START + timedelta(seconds=next(ticks))


def counting_ids() -> Callable[[], str]:
    numbers = itertools.count()
    return lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(numbers):012d}>"


def make_writer(directory: Path, **kwargs: object) -> RotatingWARCWriter:
    options: dict[str, object] = {
        "warcinfo": WARCINFO,
        "clock": fixed_clock,
        "make_id": counting_ids(),
    }
    options.update(kwargs)
    return RotatingWARCWriter(directory, **options)  # type: ignore[arg-type]


def payload_bytes(n: int, size: int = 2000) -> bytes:
    return Random(n).randbytes(size)


def http_group(
    writer: RotatingWARCWriter, n: int, size: int = 2000
) -> tuple[ArcWarcRecord, ArcWarcRecord]:
    """A response and the request that produced it, as the harvester would build them."""
    uri = f"http://example.com/page/{n}"
    response = writer.response_record(
        uri,
        StatusAndHeaders("200 OK", [("Content-Type", "application/octet-stream")], "HTTP/1.1"),
        payload_bytes(n, size),
        ip="192.0.2.7",
    )
    request = writer.request_record(
        uri,
        StatusAndHeaders(
            f"GET /page/{n} HTTP/1.1", [("Host", "example.com")], is_http_request=True
        ),
        concurrent_to=response.rec_headers.get_header("WARC-Record-ID"),
        ip="192.0.2.7",
    )
    return response, request


def record_id(record: ArcWarcRecord) -> str:
    return record.rec_headers.get_header("WARC-Record-ID")


def read_records(path: Path) -> list[tuple[ArcWarcRecord, bytes]]:
    """Every record of a WARC with its content (HTTP payload, or the whole block)."""
    with open(path, "rb") as fh:
        return [(record, record.content_stream().read()) for record in ArchiveIterator(fh)]


def record_ids(path: Path) -> list[str]:
    return [record_id(record) for record, _ in read_records(path)]


def finished(path: Path | None) -> Path:
    assert path is not None
    return path.with_name(path.name.removesuffix(".open"))


def closed(writer: RotatingWARCWriter) -> Path:
    """Close ``writer``; the file it was writing, finished."""
    path = finished(writer.current_path)
    writer.close()
    return path


def warcio_check(*paths: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def gunzip_all(path: Path) -> bytes:
    """Decompress every member; gzip raises EOFError on a truncated one (unlike warcio)."""
    return gzip.decompress(path.read_bytes())


def member_is_whole(data: bytes) -> bool:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    inflater.decompress(data)
    return inflater.eof and not inflater.unused_data


# -- writing and reading back -----------------------------------------------------------------


def test_request_response_groups_read_back(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    groups = [http_group(writer, n) for n in range(3)]
    locations = [writer.write_group(group) for group in groups]
    path = closed(writer)

    records = read_records(path)
    assert [r.rec_type for r, _ in records] == ["warcinfo"] + ["response", "request"] * 3
    for n, (response, request) in enumerate(zip(records[1::2], records[2::2], strict=True)):
        headers = response[0].rec_headers
        assert headers.protocol == "WARC/1.1"
        assert headers.get_header("WARC-Target-URI") == f"http://example.com/page/{n}"
        assert headers.get_header("WARC-IP-Address") == "192.0.2.7"
        assert headers.get_header("WARC-Date") == "2024-05-01T12:00:00.000000Z"
        assert response[1] == payload_bytes(n)
        sha1 = base64.b32encode(hashlib.sha1(payload_bytes(n)).digest()).decode()
        assert headers.get_header("WARC-Payload-Digest") == f"sha1:{sha1}"
        assert headers.get_header("WARC-Block-Digest").startswith("sha1:")
        assert request[0].rec_headers.get_header("WARC-Concurrent-To") == record_id(response[0])
        assert request[0].http_headers.get_header("Host") == "example.com"
    assert [loc.record_id for group in locations for loc in group] == [
        record_id(r) for r, _ in records[1:]
    ]
    assert verify_warc(path) == 7
    warcio_check(path)


def test_the_real_clocks_dates_are_spelt_as_a_given_clocks(tmp_path: Path) -> None:
    writer = RotatingWARCWriter(tmp_path, prefix="t", warcinfo={"software": "test"})
    before = datetime.now(UTC)
    dates = [writer.stamp()[1] for _ in range(3)]
    after = datetime.now(UTC)
    moments = [datetime.strptime(d, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC) for d in dates]
    assert before <= moments[0] <= moments[-1] <= after
    assert dates == [make_writer(tmp_path, clock=lambda m=m: m).stamp()[1] for m in moments]


def test_locations_point_exactly_at_each_record(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    locations = [loc for n in range(3) for loc in writer.write_group(http_group(writer, n))]
    path = closed(writer)

    data = path.read_bytes()
    for location in locations:
        assert location.filename == path.name
        assert location.warc_date == "2024-05-01T12:00:00.000000Z"
        assert member_is_whole(data[location.offset : location.offset + location.length])
        with open(path, "rb") as fh:
            fh.seek(location.offset)
            record = next(iter(ArchiveIterator(fh)))
            assert record_id(record) == location.record_id
    ends = [loc.offset + loc.length for loc in locations]
    assert [loc.offset for loc in locations[1:]] == ends[:-1]
    assert ends[-1] == len(data)


def test_payload_from_streams(tmp_path: Path) -> None:
    class Unseekable(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
            return self._data.readinto(buffer)

    seekable = io.BytesIO(b"skip" + payload_bytes(1))
    seekable.seek(4)
    writer = make_writer(tmp_path)
    writer.open()
    headers = StatusAndHeaders("200 OK", [], "HTTP/1.1")
    writer.write_group(
        [
            writer.response_record("http://example.com/a", headers, seekable),
            writer.response_record(
                "http://example.com/b", headers, io.BufferedReader(Unseekable(payload_bytes(2)))
            ),
        ]
    )
    path = closed(writer)
    assert [content for _, content in read_records(path)[1:]] == [
        payload_bytes(1),
        payload_bytes(2),
    ]
    assert verify_warc(path) == 3


def test_warcinfo_opens_each_file_golden(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    writer.write_group(http_group(writer, 0))
    path = closed(writer)

    body = (
        b"software: coop-archive/0.1.0\r\n"
        b"hostname: example-host\r\n"
        b"robots: obey\r\n"
        b"isPartOf: test-collection\r\n"
        b"format: WARC File Format 1.1\r\n"
        b"conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/"
        b"warc-1.1/\r\n"
    )
    digest = base64.b32encode(hashlib.sha1(body).digest())
    expected = (
        b"WARC/1.1\r\n"
        b"WARC-Type: warcinfo\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r\n"
        b"WARC-Date: 2024-05-01T12:00:00.000000Z\r\n"
        b"WARC-Filename: " + path.name.encode() + b"\r\n"
        b"WARC-Block-Digest: sha1:" + digest + b"\r\n"
        b"Content-Type: application/warc-fields\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n"
        b"\r\n" + body + b"\r\n\r\n"
    )
    assert gunzip_all(path).startswith(expected)
    assert path.name == f"harvest-20240501120000000000-00000-{os.getpid()}.warc.gz"


def test_same_input_gives_identical_bytes(tmp_path: Path) -> None:
    def run(directory: Path) -> dict[str, bytes]:
        writer = make_writer(directory, clock=stepping_clock(), max_size=5000)
        writer.open()
        for n in range(6):
            writer.write_group(http_group(writer, n))
            writer.write_group([writer.metadata_record(b"<didl n='%d'/>" % n)])
        writer.close()
        return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}

    first, second = run(tmp_path / "a"), run(tmp_path / "b")
    assert len(first) > 1
    assert first == second


# -- record builders -------------------------------------------------------------------------


def test_metadata_record_has_no_target_uri_by_default(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    plain = writer.metadata_record(b"<didl/>", refers_to="<urn:uuid:x>")
    targeted = writer.metadata_record(b"<didl/>", target_uri="http://example.com/")
    writer.write_group([plain, targeted])
    path = closed(writer)

    (first, content), (second, _) = read_records(path)[1:]
    assert first.rec_headers.get_header("WARC-Target-URI") is None
    assert first.rec_headers.get_header("WARC-Refers-To") == "<urn:uuid:x>"
    assert first.rec_headers.get_header("Content-Type") == "application/xml"
    assert content == b"<didl/>"
    assert second.rec_headers.get_header("WARC-Target-URI") == "http://example.com/"
    warcio_check(path)


def test_revisit_records(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    digest = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    url, date = "http://example.com/", "2024-01-01T00:00:00.000000Z"
    of = Revisit("identical-payload-digest", "<urn:uuid:original>", url, date, digest)
    identical = writer.revisit_record(url, None, of)
    not_modified = writer.revisit_record(
        url,
        StatusAndHeaders("304 Not Modified", [("ETag", '"abc"')], "HTTP/1.1"),
        Revisit("server-not-modified", None, url, date, digest),
    )
    writer.write_group([identical, not_modified])
    path = closed(writer)

    (first, _), (second, _) = read_records(path)[1:]
    assert first.rec_type == second.rec_type == "revisit"
    headers = first.rec_headers
    assert headers.get_header("WARC-Profile") == (
        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    )
    assert headers.get_header("WARC-Refers-To-Target-URI") == "http://example.com/"
    assert headers.get_header("WARC-Refers-To-Date") == "2024-01-01T00:00:00.000000Z"
    assert headers.get_header("WARC-Refers-To") == "<urn:uuid:original>"
    assert headers.get_header("WARC-Payload-Digest") == digest
    assert headers.get_header("Content-Length") == "0"
    assert headers.get_header("Content-Type") is None
    assert second.rec_headers.get_header("WARC-Profile") == (
        "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
    )
    assert second.http_headers.get_statuscode() == "304"
    assert second.http_headers.get_header("ETag") == '"abc"'
    assert verify_warc(path) == 3
    warcio_check(path)


def test_unknown_revisit_profile_is_refused() -> None:
    with pytest.raises(ValueError, match="profile"):
        Revisit("same-ish", None, "http://example.com/", "2024-01-01T00:00:00Z", "sha1:AAAA")


def test_truncated_response_and_resource(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    headers = StatusAndHeaders("200 OK", [("Content-Length", "999999")], "HTTP/1.1")
    response = writer.response_record(
        "http://example.com/big", headers, b"first part", truncated="length"
    )
    resource = writer.resource_record("urn:x-test:note", "text/plain", b"a note")
    writer.write_group([response, resource])
    path = closed(writer)

    (first, content), (second, note) = read_records(path)[1:]
    assert first.rec_headers.get_header("WARC-Truncated") == "length"
    assert content == b"first part"
    assert second.rec_type == "resource"
    assert second.rec_headers.get_header("Content-Type") == "text/plain"
    assert note == b"a note"
    warcio_check(path)


def test_cdxj_indexer_reads_warc_1_1(tmp_path: Path) -> None:
    writer = make_writer(tmp_path / "warcs", clock=lambda: START.replace(microsecond=123456))
    writer.open()
    response, request = http_group(writer, 0)
    metadata = writer.metadata_record(b"<didl/>", refers_to=record_id(response))
    writer.write_group([response, request, metadata])
    path = closed(writer)

    index = tmp_path / "index.cdxj"
    write_cdx_index(str(index), [str(path)], {})
    lines = index.read_text().splitlines()
    captures = [line for line in lines if line.startswith("com,example)/page/0 ")]
    assert len(captures) == 1
    assert captures[0].split(" ")[1] == "20240501120000"
    assert all("example.com" not in line for line in lines if line not in captures)


# -- files: .open, rotation, names ----------------------------------------------------------


def test_file_is_open_while_writing_and_renamed_on_close(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    assert writer.current_path is None
    writer.write_group(http_group(writer, 0))
    current = writer.current_path
    assert current is not None
    assert current.name.endswith(".warc.gz.open")
    assert current.exists()
    assert not finished(current).exists()
    writer.close()
    assert not current.exists()
    assert finished(current).exists()
    assert [p.name for p in tmp_path.iterdir()] == [finished(current).name]


def test_write_group_needs_an_open_writer(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    with pytest.raises(ArchiveError):
        writer.write_group(http_group(writer, 0))


def test_no_file_is_finished_inside_one_file(tmp_path: Path) -> None:
    """A caller commits its state for a batch of groups inside ``one_file``: none of them may
    reach a finished file first."""
    writer = make_writer(tmp_path, max_size=3000)
    with writer:
        with writer.one_file():
            batch = [writer.write_group(http_group(writer, n)) for n in range(8)]
            assert not list(tmp_path.glob("*.warc.gz")), "a file was finished inside the block"
        after = writer.write_group(http_group(writer, 8))
    names = {loc.filename for group in batch for loc in group}
    assert len(names) == 1
    assert batch[-1][-1].offset > 3000, "the batch ran past max_size: it was held"
    assert after[0].filename not in names, "the first group after the block rotates"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names | {after[0].filename})


def test_a_block_that_begins_full_begins_a_new_file(tmp_path: Path) -> None:
    """The harvest ends a commit's block when ``full()``; the next block must not keep
    adding to that file, or it would never rotate."""
    writer = make_writer(tmp_path, max_size=3000)
    with writer:
        assert not writer.full()
        with writer.one_file():
            first = [writer.write_group(http_group(writer, n)) for n in range(8)]
            assert writer.full()
        assert not list(tmp_path.glob("*.warc.gz")), "finished before anything asked for room"
        with writer.one_file():
            assert not writer.full()
            assert len(list(tmp_path.glob("*.warc.gz"))) == 1, "the full file was finished"
            second = writer.write_group(http_group(writer, 8))
    assert second[0].filename != first[0][0].filename
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {first[0][0].filename, second[0].filename}
    )


def test_rotation_by_size_never_splits_groups(tmp_path: Path) -> None:
    max_size = 6000
    writer = make_writer(tmp_path, max_size=max_size)
    with writer:
        groups = [writer.write_group(http_group(writer, n)) for n in range(10)]
        groups.append(writer.write_group(http_group(writer, 10, size=3 * max_size)))
        groups.append(writer.write_group(http_group(writer, 11)))

    names = list(dict.fromkeys(loc.filename for group in groups for loc in group))
    assert len(names) > 3
    assert names == sorted(names)
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    assert all(NAME_RE.match(name) for name in names)
    for group in groups:
        assert len({loc.filename for loc in group}) == 1
    for name in names:
        path = tmp_path / name
        first, _ = read_records(path)[0]
        assert first.rec_type == "warcinfo"
        assert first.rec_headers.get_header("WARC-Filename") == name
        starts = [group[0].offset for group in groups if group[0].filename == name]
        assert starts[-1] < max_size  # rotation starts a new file once max_size is reached
        assert verify_warc(path) == 1 + 2 * len(starts)
    assert groups[-2][0].filename != groups[-1][0].filename  # the big group filled its file
    warcio_check(*(tmp_path / name for name in names))


def test_names_are_unique_and_existing_files_untouched(tmp_path: Path) -> None:
    taken = tmp_path / f"harvest-20240501120000000000-00000-{os.getpid()}.warc.gz"
    taken.write_bytes(b"keep")
    writers = [make_writer(tmp_path) for _ in range(3)]
    for writer in writers:
        writer.open()
        writer.write_group(http_group(writer, 0))
    for writer in writers:
        writer.close()
    assert taken.read_bytes() == b"keep"
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 4
    assert [name.split("-")[2] for name in names] == ["00000", "00001", "00002", "00003"]


def test_failed_group_is_cut_back(tmp_path: Path) -> None:
    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
            raise OSError("connection reset")

    writer = make_writer(tmp_path)
    writer.open()
    writer.write_group(http_group(writer, 0))
    current = writer.current_path
    assert current is not None
    size = current.stat().st_size
    response, request = http_group(writer, 1)
    response.raw_stream = Broken()
    with pytest.raises(ArchiveError, match="connection reset"):
        writer.write_group([request, response])
    assert current.stat().st_size == size
    kept = writer.write_group(http_group(writer, 2))
    writer.close()

    path = finished(current)
    assert verify_warc(path) == 5
    assert record_ids(path)[-2:] == [loc.record_id for loc in kept]
    warcio_check(path)


# -- verification --------------------------------------------------------------------------


def test_verify_warc_catches_bad_digest_like_warcio(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    wrong = {"WARC-Payload-Digest": "sha1:" + "A" * 32}
    headers = StatusAndHeaders("200 OK", [], "HTTP/1.1")
    writer.write_group([writer.response_record("http://e.com/", headers, b"x", extra=wrong)])
    path = closed(writer)
    with pytest.raises(ArchiveError, match="digest"):
        verify_warc(path)
    result = subprocess.run([sys.executable, "-m", "warcio.cli", "check", str(path)])
    assert result.returncode != 0


def test_verify_warc_refuses_several_records_in_one_member(tmp_path: Path) -> None:
    buffer = BufferWARCWriter(gzip=False)
    for n in range(2):
        buffer.write_record(buffer.create_warc_record("", "resource", io.BytesIO(b"%d" % n), 1))
    path = tmp_path / "one-member.warc.gz"
    path.write_bytes(gzip.compress(buffer.get_contents()))
    with pytest.raises(ArchiveError, match="not one record"):
        verify_warc(path)


def test_verify_warc_catches_truncation(tmp_path: Path) -> None:
    writer = make_writer(tmp_path)
    writer.open()
    writer.write_group(http_group(writer, 0))
    path = closed(writer)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ArchiveError, match="truncated"):
        verify_warc(path)


# -- crash repair ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """The bytes of a live ``.open`` file and its records (a short repr, for hypothesis)."""

    data: bytes = field(repr=False)
    locations: tuple[RecordLocation, ...] = field(repr=False)

    def kept_after(self, cut: int, tail: bytes) -> list[RecordLocation]:
        """The records wholly present in ``data[:cut] + tail``."""
        same = next(
            (i for i, byte in enumerate(tail) if self.data[cut + i : cut + i + 1] != bytes([byte])),
            len(tail),
        )
        return [loc for loc in self.locations if loc.offset + loc.length <= cut + same]


@pytest.fixture(scope="module")
def open_sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """A live ``.open`` file holding groups of two and of three records."""
    writer = make_writer(tmp_path_factory.mktemp("sample"))
    writer.open()
    locations: list[RecordLocation] = []
    for n in range(4):
        response, request = http_group(writer, n, size=700 + 300 * n)
        group = [response, request, writer.metadata_record(b"<m/>" * n)][: 2 + n % 2]
        locations += writer.write_group(group)
    assert writer.current_path is not None
    data = writer.current_path.read_bytes()
    writer.close()
    return Sample(data, tuple(locations))


def check_repair_after_cut(directory: Path, sample: Sample, cut: int, tail: bytes = b"") -> None:
    """Cut the file as a kill would, repair, and check exactly the complete records remain."""
    leftover = directory / "harvest-cut.warc.gz.open"
    leftover.write_bytes(sample.data[:cut] + tail)
    kept = sample.kept_after(cut, tail)

    repaired = repair_open_files(directory)

    assert not leftover.exists()
    if not kept:  # nothing, or only the warcinfo record, survived
        assert repaired == []
        assert list(directory.iterdir()) == []
        return
    path = directory / "harvest-cut.warc.gz"
    assert repaired == [path]
    assert path.read_bytes() == sample.data[: kept[-1].offset + kept[-1].length]
    gunzip_all(path)
    assert verify_warc(path) == 1 + len(kept)
    assert record_ids(path)[1:] == [loc.record_id for loc in kept]


def cut_points(sample: Sample) -> Iterator[int]:
    yield from range(0, len(sample.data) + 1, 37)
    last = sample.locations[-1]
    yield from range(last.offset, len(sample.data) + 1)  # every byte of the last member
    for loc in sample.locations:
        yield loc.offset
        yield loc.offset + loc.length // 2
        yield loc.offset + loc.length - 1


def test_repair_keeps_every_complete_record_at_any_cut(tmp_path: Path, open_sample: Sample) -> None:
    for cut in sorted(set(cut_points(open_sample))):
        directory = tmp_path / str(cut)
        directory.mkdir()
        check_repair_after_cut(directory, open_sample, cut)
        shutil.rmtree(directory)


@pytest.mark.parametrize("where", [0.3, 0.55, 0.8, 1.0])
def test_repaired_files_pass_warcio_check(
    tmp_path: Path, open_sample: Sample, where: float
) -> None:
    check_repair_after_cut(tmp_path, open_sample, int(len(open_sample.data) * where) - 5)
    warcio_check(*tmp_path.iterdir())


@settings(max_examples=80, deadline=None)
@given(
    cut=st.floats(0, 1),
    tail=st.one_of(
        st.sampled_from([b"", b"\0" * 4096, b"\x1f\x8b\x08\0junk"]), st.binary(max_size=16)
    ),
)
def test_repair_property(open_sample: Sample, cut: float, tail: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        check_repair_after_cut(Path(directory), open_sample, int(len(open_sample.data) * cut), tail)


def write_aligned_group(directory: Path, member: int) -> RotatingWARCWriter:
    """A live writer whose first group's ``member``-th record (0 response, 1 request,
    2 metadata) ends exactly where one of repair's reads of the file ends."""
    size = 2 * _READ_SIZE
    for _ in range(200):
        shutil.rmtree(directory, ignore_errors=True)
        writer = make_writer(directory)
        writer.open()
        response, request = http_group(writer, 0, size=size)
        locations = writer.write_group([response, request, writer.metadata_record(b"<m/>")])
        past = (locations[member].offset + locations[member].length) % _READ_SIZE
        if past == 0:
            return writer
        writer.close()
        # Random bytes compress to their own size and a few bytes more: aim short of the next
        # boundary, then creep up on it (deterministic: fixed clock, ids and payloads).
        gap = _READ_SIZE - past
        size += gap - 24 if gap > 24 else 1
    raise AssertionError("no payload size puts the member's end on a read boundary")


@pytest.mark.parametrize("member", [0, 1, 2])
def test_repair_reads_past_a_member_ending_at_a_read_boundary(tmp_path: Path, member: int) -> None:
    """Such a member once looked like the end of the file: repair cut off the groups after
    it, which the harvester had marked archived, and a rerun left them out for good."""
    directory = tmp_path / "warcs"
    writer = write_aligned_group(directory, member)
    kept = [
        writer.write_group([*http_group(writer, n), writer.metadata_record(b"<m/>")])
        for n in (1, 2)
    ]
    writer.write_group(list(http_group(writer, 3)))  # a kill before the group's DIDL record
    assert writer.current_path is not None
    shutil.copy(writer.current_path, directory / "harvest-killed.warc.gz.open")
    whole = closed(writer)

    repaired = repair_open_files(
        directory, group_end=lambda fields: fields.get("warc-type") == "metadata"
    )

    path = directory / "harvest-killed.warc.gz"
    assert repaired == [path]
    assert path.stat().st_size == kept[-1][-1].offset + kept[-1][-1].length
    assert verify_warc(path) == 1 + 3 * 3
    assert record_ids(path)[-3:] == [location.record_id for location in kept[-1]]
    assert verify_warc(whole) == 1 + 3 * 3 + 2


def test_open_repairs_leftovers_but_not_live_files(tmp_path: Path, open_sample: Sample) -> None:
    live = make_writer(tmp_path)
    live.open()
    live.write_group(http_group(live, 0))
    leftover = tmp_path / "harvest-old.warc.gz.open"
    leftover.write_bytes(open_sample.data[: open_sample.locations[3].offset + 20])

    second = make_writer(tmp_path, prefix="other")
    second.open()

    assert live.current_path is not None and live.current_path.exists()
    assert not leftover.exists()
    assert verify_warc(tmp_path / "harvest-old.warc.gz") == 4
    live.close()
    second.close()


CHILD = """
import itertools, random, sys
from pathlib import Path
from warcio.statusandheaders import StatusAndHeaders
from harvester.archive.warc import RotatingWARCWriter

writer = RotatingWARCWriter(Path(sys.argv[1]), max_size=3_000_000)
writer.open()
journal = open(sys.argv[2], "a")
blob = random.Random(0).randbytes(1 << 21)
for n in itertools.count():
    uri = "http://example.com/%d" % n
    start, size = n * 7919 % (1 << 20), random.Random(n).randrange(100, 1 << 20)
    response = writer.response_record(
        uri, StatusAndHeaders("200 OK", [], "HTTP/1.1"), blob[start : start + size]
    )
    request = writer.request_record(
        uri,
        StatusAndHeaders("GET / HTTP/1.1", [], is_http_request=True),
        concurrent_to=response.rec_headers.get_header("WARC-Record-ID"),
    )
    for location in writer.write_group([response, request]):
        journal.write(location.record_id + "\\n")
    journal.flush()
"""


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.013, 0.029])
def test_sigkill_then_repair(tmp_path: Path, delay: float) -> None:
    directory, journal = tmp_path / "warcs", tmp_path / "journal"
    journal.touch()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(directory), str(journal)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 60
        while journal.read_text().count("\n") < 20:
            assert child.poll() is None, "the writer died by itself"
            assert time.monotonic() < deadline, "the writer is too slow"
            time.sleep(0.01)
        time.sleep(delay)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()

    written = [line for line in journal.read_text().split("\n")[:-1] if line]
    repair_open_files(directory)
    paths = sorted(directory.iterdir())
    assert paths and all(path.name.endswith(".warc.gz") for path in paths)
    present: list[str] = []
    for path in paths:
        gunzip_all(path)
        verify_warc(path)
        present += record_ids(path)
    assert set(written) <= set(present)
    assert len(present) == len(set(present))
    warcio_check(*paths)


def test_rename_new_never_replaces_and_calls_the_kernel_once(tmp_path: Path) -> None:
    """One ``renameat2(RENAME_NOREPLACE)``: a target made by anyone at any moment survives."""
    import errno

    from harvester.archive.files import _rename_noreplace, rename_new

    (tmp_path / "a.open").write_bytes(b"new")
    (tmp_path / "a").write_bytes(b"old")
    with pytest.raises(OSError) as raised:
        _rename_noreplace(tmp_path / "a.open", tmp_path / "a")  # the kernel itself refuses
    assert raised.value.errno == errno.EEXIST
    with pytest.raises(ArchiveError, match="already exists"):
        rename_new(tmp_path / "a.open", tmp_path / "a")
    assert (tmp_path / "a").read_bytes() == b"old"
    rename_new(tmp_path / "a.open", tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
