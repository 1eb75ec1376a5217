"""Tests for harvester.archive.cdx.index: WARCs written with warcio here, indexed, read back."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from cdxj_indexer.main import write_cdx_index
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.archive.cdx import index as cdx
from harvester.archive.cdx.index import CdxIndex
from harvester.archive.records import Revisit
from harvester.archive.warc import RotatingWARCWriter
from harvester.exceptions import ArchiveError

ROOT = Path(__file__).resolve().parents[1]
PAGE = "http://example.com/page?b=2&a=1"
IMAGE = "http://example.com/img/logo.png"
OAI = "http://example.com/oai?verb=ListRecords&metadataPrefix=oai_dc"
LINE = re.compile(r"^(\S+) (\d{14}) (\{.*\})\n$")
FIELDS = ["url", "mime", "status", "digest", "length", "offset", "filename"]


def record_id(number: int) -> str:
    return f"<urn:uuid:00000000-0000-4000-8000-{number:012d}>"


class Warc:
    """A small WARC written with warcio, with fixed record IDs and dates."""

    def __init__(self, path: Path, first_id: int) -> None:
        self.path = path
        self.next_id = first_id
        self.fh = open(path, "wb")  # noqa: SIM115 - closed in close()
        self.writer = WARCWriter(self.fh, gzip=True, warc_version="1.1")

    def add(
        self,
        kind: str,
        uri: str,
        payload: bytes = b"",
        *,
        date: str = "2024-05-01T12:00:00Z",
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> str:
        rid, self.next_id = record_id(self.next_id), self.next_id + 1
        warc_headers = {"WARC-Record-ID": rid, "WARC-Date": date, **(headers or {})}
        record = self.writer.create_warc_record(
            uri,
            kind,
            payload=io.BytesIO(payload),
            length=len(payload),
            warc_headers_dict=warc_headers,
            **options,
        )
        self.writer.write_record(record)
        return rid

    def response(self, uri: str, body: bytes, mime: str, date: str, status: str = "200 OK") -> str:
        http = StatusAndHeaders(status, [("Content-Type", mime)], protocol="HTTP/1.1")
        return self.add("response", uri, body, date=date, http_headers=http)

    def close(self) -> Path:
        self.fh.close()
        return self.path


def first_warc(folder: Path) -> Path:
    """Captures of PAGE, IMAGE and OAI, plus every record that is not a capture."""
    warc = Warc(folder / "harvest-20240501120000-00000-1.warc.gz", 100)
    fields = b"software: test\r\nformat: WARC File Format 1.1\r\n"
    warc.add("warcinfo", "", fields, warc_content_type="application/warc-fields")
    page = warc.response(
        PAGE, b"<html>page</html>", "text/html; charset=utf-8", "2024-05-01T12:00:01Z"
    )
    request = StatusAndHeaders(
        "GET /page?b=2&a=1 HTTP/1.1", [("Host", "example.com")], is_http_request=True
    )
    warc.add("request", PAGE, headers={"WARC-Concurrent-To": page}, http_headers=request)
    didl = b"<didl:DIDL xmlns:didl='urn:mpeg:mpeg21:2002:02-DIDL-NS'/>"
    warc.add(
        "metadata", "", didl, warc_content_type="application/xml", headers={"WARC-Refers-To": page}
    )
    # Even with the page's URL, metadata must never be listed as a capture of it.
    warc.add(
        "metadata",
        PAGE,
        didl,
        warc_content_type="application/xml",
        headers={"WARC-Refers-To": page},
    )
    warc.add("metadata", PAGE, b"via: x\r\n", warc_content_type="application/warc-fields")
    warc.response(IMAGE, b"\x89PNG\r\n\x1a\n", "image/png", "2024-05-01T12:00:02Z")
    warc.add(
        "resource", OAI, b"<OAI-PMH/>", warc_content_type="text/xml", date="2024-05-01T12:00:03Z"
    )
    return warc.close()


def second_warc(folder: Path) -> Path:
    """A later revisit of PAGE and a new capture."""
    warc = Warc(folder / "harvest-20240502120000-00001-1.warc.gz", 200)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    digest = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    warc.add(
        "revisit",
        PAGE,
        date="2024-05-02T12:00:00Z",
        http_headers=http,
        headers={
            "WARC-Profile": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
            "WARC-Refers-To-Target-URI": PAGE,
            "WARC-Refers-To-Date": "2024-05-01T12:00:01Z",
            "WARC-Payload-Digest": digest,
        },
    )
    warc.response("https://www.example.com/new", b"new", "text/plain", "2024-05-02T12:00:01Z")
    return warc.close()


def corrupt_warc(folder: Path) -> Path:
    path = folder / "harvest-broken.warc.gz"
    path.write_bytes(b"this is not a WARC file at all\r\n\r\n" * 3)
    return path


def scan(warc: Path) -> list[tuple[int, str, str | None, int]]:
    """Offset, type, target URI and length of every record, as warcio reads them."""
    with open(warc, "rb") as fh:
        it = ArchiveIterator(fh)
        return [
            (
                it.get_record_offset(),
                record.rec_type,
                record.rec_headers.get_header("WARC-Target-URI"),
                it.get_record_length(),
            )
            for record in it
        ]


def read_lines(index: CdxIndex) -> list[str]:
    return index.path.read_text(encoding="utf-8").splitlines(keepends=True)


def index_folder_names(index: CdxIndex) -> list[str]:
    return sorted(p.name for p in index.path.parent.iterdir())


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    (tmp_path / "archive").mkdir()
    return tmp_path


@pytest.fixture
def index(collection: Path) -> CdxIndex:
    return CdxIndex(collection / "indexes" / "index.cdxj")


# -- the lines -------------------------------------------------------------------------


def test_only_captures_are_indexed_in_sorted_cdxj(collection: Path, index: CdxIndex) -> None:
    warc = first_warc(collection / "archive")
    assert index.add_warcs([warc]) == 3
    lines = read_lines(index)
    assert lines == sorted(lines)
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    blocks = [json.loads(m.group(3)) for m in parsed if m]
    assert [list(b) for b in blocks] == [FIELDS, FIELDS[:2] + FIELDS[3:], FIELDS]
    assert [(m.group(1), m.group(2)) for m in parsed if m] == [
        ("com,example)/img/logo.png", "20240501120002"),
        ("com,example)/oai?metadataprefix=oai_dc&verb=listrecords", "20240501120003"),
        ("com,example)/page?a=1&b=2", "20240501120001"),
    ]
    assert [(b["url"], b["mime"], b.get("status")) for b in blocks] == [
        (IMAGE, "image/png", "200"),
        (OAI, "text/xml", None),
        (PAGE, "text/html", "200"),
    ]
    assert {b["filename"] for b in blocks} == {warc.name}
    assert all(re.fullmatch(r"sha1:[A-Z2-7]{32}", b["digest"]) for b in blocks)


def test_offsets_and_lengths_point_at_the_records(collection: Path, index: CdxIndex) -> None:
    warc = first_warc(collection / "archive")
    index.add_warcs([warc])
    records = {(url, kind): (offset, length) for offset, kind, url, length in scan(warc)}
    for url, kind in ((PAGE, "response"), (IMAGE, "response"), (OAI, "resource")):
        (line,) = index.lookup(url)
        assert (int(line["offset"]), int(line["length"])) == records[url, kind]
        with open(warc, "rb") as fh:
            fh.seek(int(line["offset"]))
            member = fh.read(int(line["length"]))
        record = next(iter(ArchiveIterator(io.BytesIO(member))))
        assert (record.rec_headers.get_header("WARC-Target-URI"), record.rec_type) == (url, kind)


def test_lines_are_those_cdxj_indexer_writes_minus_non_captures(
    collection: Path, index: CdxIndex
) -> None:
    warc = first_warc(collection / "archive")
    index.add_warcs([warc])
    reference = io.StringIO()
    write_cdx_index(reference, [str(warc)], {"sort": True})
    theirs = reference.getvalue().splitlines(keepends=True)
    ours = read_lines(index)
    assert set(ours) < set(theirs)
    dropped = [json.loads(line.split(" ", 2)[2]) for line in set(theirs) - set(ours)]
    # cdxj-indexer lists both application/xml metadata records: one without a URL at all,
    # one as a capture of the page.
    assert sorted((d["mime"], d.get("url", "-")) for d in dropped) == [
        ("application/xml", "-"),
        ("application/xml", PAGE),
    ]


def test_metadata_is_never_a_capture_of_the_page(collection: Path, index: CdxIndex) -> None:
    index.add_warcs([first_warc(collection / "archive")])
    (line,) = index.lookup(PAGE)
    assert (line["mime"], line["status"], line["timestamp"]) == (
        "text/html",
        "200",
        "20240501120001",
    )
    assert not any(line.startswith("- ") or "application/xml" in line for line in read_lines(index))


def test_revisits_are_indexed(collection: Path, index: CdxIndex) -> None:
    archive = collection / "archive"
    index.add_warcs([first_warc(archive), second_warc(archive)])
    captures = index.lookup(PAGE)
    assert [(c["timestamp"], c["mime"], c["status"]) for c in captures] == [
        ("20240501120001", "text/html", "200"),
        ("20240502120000", "warc/revisit", "200"),
    ]
    assert captures[1]["digest"] == "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    assert captures[1]["filename"] == "harvest-20240502120000-00001-1.warc.gz"


def test_lookup_matches_by_surt_key(collection: Path, index: CdxIndex) -> None:
    index.add_warcs([first_warc(collection / "archive"), second_warc(collection / "archive")])
    assert [c["url"] for c in index.lookup("https://www.example.com/page?a=1&b=2")] == [PAGE, PAGE]
    assert [c["url"] for c in index.lookup("http://example.com/new")] == [
        "https://www.example.com/new"
    ]
    assert index.lookup("http://example.com/missing") == []


def test_a_missing_index_is_empty(index: CdxIndex) -> None:
    assert index.lookup(PAGE) == []
    assert index.indexed_files() == set()
    assert not index.path.exists()


# -- merging, idempotency, rebuild -----------------------------------------------------


def test_adding_is_idempotent(collection: Path, index: CdxIndex) -> None:
    warc = first_warc(collection / "archive")
    assert index.add_warcs([warc, warc]) == 3
    before = index.path.read_bytes()
    assert index.add_warcs([warc]) == 0
    assert index.add_warcs([collection / "elsewhere" / warc.name]) == 0  # same file name
    assert index.path.read_bytes() == before
    assert index.indexed_files() == {warc.name}


def test_adding_merges_into_sorted_order(collection: Path, index: CdxIndex) -> None:
    archive = collection / "archive"
    first, second = first_warc(archive), second_warc(archive)
    index.add_warcs([first])
    assert index.add_warcs([first, second]) == 2
    lines = read_lines(index)
    assert len(lines) == 5 and lines == sorted(lines)
    assert index.indexed_files() == {first.name, second.name}


def many_captures(folder: Path, name: str, count: int, first_id: int) -> Path:
    warc = Warc(folder / name, first_id)
    for number in range(count):
        url = f"http://example.com/page/{first_id + number}"
        warc.response(url, b"<html>x</html>", "text/html", "2024-05-01T12:00:01Z")
    return warc.close()


def test_a_small_addition_gets_its_own_file_and_leaves_the_main_one(
    collection: Path, index: CdxIndex
) -> None:
    archive = collection / "archive"
    big = many_captures(archive, "harvest-20240501000000-00000-1.warc.gz", 40, 1000)
    index.add_warcs([big])
    main = index.path.read_bytes()
    small = second_warc(archive)
    assert index.add_warcs([small]) == 2
    assert index.path.read_bytes() == main  # an incremental run does not rewrite the index
    delta = index.path.with_name(f"{small.name}.cdxj")
    assert [line.split(" ", 1)[0] for line in delta.read_text().splitlines()] == [
        "com,example)/new",
        "com,example)/page?a=1&b=2",
    ]
    assert index.indexed_files() == {big.name, small.name}
    assert index.add_warcs([big, small]) == 0
    assert [c["url"] for c in index.lookup("http://example.com/new")] == [
        "https://www.example.com/new"
    ]
    assert index.lookup("http://example.com/page/1007")[0]["filename"] == big.name


def test_small_indexes_are_merged_once_they_add_up(collection: Path, index: CdxIndex) -> None:
    archive = collection / "archive"
    warcs = [
        many_captures(archive, f"harvest-2024050100000{n}-0000{n}-1.warc.gz", 10, 100 * n)
        for n in range(1, 4)
    ]
    index.add_warcs(warcs[:1])
    index.add_warcs(warcs[1:2])  # 10 lines beside 10: a quarter or more, so merged at once
    assert not list(index.path.parent.glob("*.warc.gz.cdxj"))
    index.add_warcs(warcs[2:])
    assert index.indexed_files() == {w.name for w in warcs}
    fresh = CdxIndex(collection / "fresh" / "index.cdxj")
    assert fresh.rebuild(archive) == 30
    assert index.path.read_bytes() == fresh.path.read_bytes()


def test_an_interrupted_merge_loses_nothing_and_repeats_nothing(
    collection: Path, index: CdxIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = collection / "archive"
    big = many_captures(archive, "harvest-20240501000000-00000-1.warc.gz", 40, 1000)
    index.add_warcs([big])
    small = second_warc(archive)
    index.add_warcs([small])
    # A merge killed after renaming the new main file, before removing the small ones.
    merged = sorted(index.path.read_text().splitlines(keepends=True) + read_delta(index, small))
    index.path.write_text("".join(merged), encoding="utf-8")
    lines = [(c["urlkey"], c["timestamp"]) for c in index.lookup("http://example.com/new")]
    assert lines == [("com,example)/new", "20240502120001")]
    monkeypatch.setattr(cdx, "MAX_DELTAS", 0)
    index.add_warcs([first_warc(archive)])  # the next merge drops the repeats
    assert not list(index.path.parent.glob("*.warc.gz.cdxj"))
    assert len(read_lines(index)) == 40 + 2 + 3 == len(set(read_lines(index)))


def read_delta(index: CdxIndex, warc: Path) -> list[str]:
    return index.path.with_name(f"{warc.name}.cdxj").read_text().splitlines(keepends=True)


def test_index_files_are_readable_by_others_as_the_warcs_are(
    collection: Path, index: CdxIndex
) -> None:
    index.add_warcs([first_warc(collection / "archive")])
    for path in index.path.parent.iterdir():
        if path.name != ".index.cdxj.lock":
            assert path.stat().st_mode & 0o777 == 0o644, path.name


def test_an_index_from_before_the_manifest_is_taken_over(collection: Path, index: CdxIndex) -> None:
    archive = collection / "archive"
    first = first_warc(archive)
    index.add_warcs([first])
    index.path.with_name(".index.cdxj.warcs").unlink()
    assert index.indexed_files() == {first.name}
    assert index.add_warcs([first]) == 0
    assert index.path.with_name(".index.cdxj.warcs").read_text() == f"{first.name}\n"


def test_rebuild_equals_incremental_adds_and_skips_open_files(
    collection: Path, index: CdxIndex
) -> None:
    archive = collection / "archive"
    first, second = first_warc(archive), second_warc(archive)
    (archive / "harvest-20240503-00002-1.warc.gz.open").write_bytes(b"half a record")
    index.add_warcs([second])
    index.add_warcs([first])
    incremental = index.path.read_bytes()
    index.path.write_text("com,stale)/ 20000101000000 {}\n", encoding="utf-8")
    assert index.rebuild(archive) == 5
    assert index.path.read_bytes() == incremental


def test_rebuild_of_an_empty_folder_gives_an_empty_index(collection: Path, index: CdxIndex) -> None:
    assert index.rebuild(collection / "archive") == 0
    assert index.path.read_bytes() == b""


def test_concurrent_writers_lose_nothing(collection: Path, index: CdxIndex) -> None:
    archive = collection / "archive"
    warcs = [first_warc(archive), second_warc(archive)]
    threads = [threading.Thread(target=CdxIndex(index.path).add_warcs, args=([w],)) for w in warcs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert index.indexed_files() == {w.name for w in warcs}
    assert len(read_lines(index)) == 5


# -- failures leave the index as it was ------------------------------------------------


def test_a_corrupt_warc_raises_and_changes_nothing(collection: Path, index: CdxIndex) -> None:
    archive = collection / "archive"
    index.add_warcs([first_warc(archive)])
    before, names = index.path.read_bytes(), index_folder_names(index)
    with pytest.raises(ArchiveError, match=r"harvest-broken\.warc\.gz"):
        index.add_warcs([second_warc(archive), corrupt_warc(archive)])
    assert index.path.read_bytes() == before  # the good file of the batch is not half-added
    assert index_folder_names(index) == names  # no temporary file left behind
    with pytest.raises(ArchiveError):
        index.rebuild(archive)
    assert index.path.read_bytes() == before


def cut_copy(warc: Path, where: str) -> Path:
    """A copy of ``warc`` that ends inside the page's record."""
    if where == "gzip member":
        offset, _kind, _url, length = next(r for r in scan(warc) if r[1:3] == ("response", PAGE))
        data, name = warc.read_bytes()[: offset + length // 2], "harvest-cut.warc.gz"
    else:
        data, name = gzip.decompress(warc.read_bytes()), "harvest-cut.warc"
        start = data.index(b"WARC-Type: response")
        end = data.index(b"Content-Length", start) if where == "header" else data.index(b"page</")
        data = data[:end]
    path = warc.with_name(name)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("where", ["gzip member", "header", "block"])
def test_a_file_cut_short_raises(collection: Path, index: CdxIndex, where: str) -> None:
    """warcio reads each of these without complaint, indexing what it got or nothing."""
    cut = cut_copy(first_warc(collection / "archive"), where)
    with pytest.raises(ArchiveError, match=re.escape(cut.name)):
        index.add_warcs([cut])
    assert not index.path.exists()


def test_only_closed_warc_files_are_taken(collection: Path, index: CdxIndex) -> None:
    path = collection / "archive" / "harvest-1.warc.gz.open"
    path.write_bytes(b"")
    with pytest.raises(ArchiveError, match="not a closed"):
        index.add_warcs([path])


def test_a_failed_rename_leaves_the_old_index(
    collection: Path, index: CdxIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = collection / "archive"
    index.add_warcs([first_warc(archive)])
    before, names = index.path.read_bytes(), index_folder_names(index)

    def fail(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cdx.os, "replace", fail)
    with pytest.raises(ArchiveError, match="No space left"):
        index.add_warcs([second_warc(archive)])
    assert index.path.read_bytes() == before
    assert index_folder_names(index) == names


KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from harvester.archive.cdx import index as cdx

def die(src, dst):  # the worst moment: the new index is written but not yet renamed
    os.kill(os.getpid(), signal.SIGKILL)

cdx.os.replace = die
cdx.CdxIndex(Path(sys.argv[1])).add_warcs([Path(sys.argv[2])])
"""


def test_a_writer_killed_before_the_rename_leaves_the_old_index(
    collection: Path, index: CdxIndex
) -> None:
    archive = collection / "archive"
    index.add_warcs([first_warc(archive)])
    before = index.path.read_bytes()
    second = second_warc(archive)
    args = [sys.executable, "-c", KILLED_WRITER, str(index.path), str(second)]
    result = subprocess.run(args, cwd=ROOT, timeout=60, check=False)
    assert result.returncode == -9
    assert index.path.read_bytes() == before
    (leftover,) = index.path.parent.glob(".index.cdxj.*.tmp")
    left = leftover.read_text(encoding="utf-8").splitlines()  # the new file, never renamed
    assert len(left) == 2 and all(second.name in line for line in left)
    assert index.add_warcs([second]) == 2  # the next writer cleans up and finishes the job
    assert not list(index.path.parent.glob("*.tmp"))
    assert len(read_lines(index)) == 5


def test_unreadable_index_lines_raise(index: CdxIndex) -> None:
    index.path.parent.mkdir(parents=True)
    index.path.write_text("not a cdxj line\n", encoding="utf-8")
    with pytest.raises(ArchiveError, match="rebuild"):
        index.indexed_files()
    assert os.path.getsize(index.path) == len("not a cdxj line\n")


# -- lines made while writing ----------------------------------------------------------


def test_the_writers_lines_are_those_read_back(collection: Path, index: CdxIndex) -> None:
    """Every kind of record the harvester writes, indexed as written and as read back."""
    finished: dict[str, list[str]] = {}
    warcs = collection / "warcs"
    with RotatingWARCWriter(warcs, on_finish=finished.__setitem__) as writer:
        page = StatusAndHeaders(
            "200 OK", [("Content-Type", "text/html ; charset=UTF-8")], protocol="HTTP/1.1"
        )
        gone = StatusAndHeaders("404 Not Found", [], protocol="HTTP/1.1")
        response = writer.response_record(PAGE, page, b"<html>page</html>", truncated="length")
        request = writer.request_record(
            PAGE, StatusAndHeaders("GET / HTTP/1.1", [], is_http_request=True)
        )
        at, digests = "2024-05-01T12:00:01Z", ("sha1:" + "A" * 32, "sha1:" + "B" * 32)
        of_page = Revisit("identical-payload-digest", None, PAGE, at, digests[0])
        revisit = writer.revisit_record(PAGE, page, of_page)
        of_image = Revisit("server-not-modified", None, IMAGE, at, digests[1])
        bare_revisit = writer.revisit_record(IMAGE, None, of_image)
        writer.write_group([response, request, revisit, bare_revisit])
        writer.write_group(
            [
                writer.response_record("http://example.com/gone", gone, b""),
                writer.resource_record(OAI, "text/xml", b"<OAI-PMH/>"),
                writer.resource_record("http://example.com/raw", "", b"bytes"),
                writer.metadata_record(
                    b"<didl/>", refers_to=response.rec_headers["WARC-Record-ID"]
                ),
                writer.metadata_record(b"<didl/>", target_uri=PAGE),
                writer.metadata_record(
                    b"outlink: x\r\n", content_type="application/warc-fields", target_uri=PAGE
                ),
            ]
        )
    ((name, lines),) = finished.items()
    assert len(lines) == 6
    assert index.add_lines(name, lines) == 6
    fresh = CdxIndex(collection / "fresh" / "index.cdxj")
    assert fresh.rebuild(warcs) == 6
    assert read_lines(index) == read_lines(fresh)
    assert index.add_warcs([warcs / name]) == 0  # indexed already: not read back
