"""``harvester verify``: a real harvest's collection is intact, and damaged copies of it are
named, file and record offset (or index line, or state row), with exit code 1."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from coop_common.exitcode import ExitCode
from harvester.archive.recordbytes import gzip_parts
from harvester.cli import main
from harvester.run.lock import CollectionLock
from tests.harvested import Harvested, harvested


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harvested]:
    with harvested(tmp_path_factory.mktemp("verify")) as found:
        yield found


def run_verify(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main(["verify", str(folder), "--quiet", "--json"])
    return code, json.loads(capsys.readouterr().out)


def the_warc(folder: Path) -> Path:
    (path,) = sorted((folder / "warcs").glob("*.warc.gz"))
    return path


def members(path: Path) -> list[tuple[int, int, str]]:
    """(offset, length, WARC-Type) of every record, as warcio sees them."""
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        found = []
        for record in it:
            record_type = record.rec_type
            it.read_to_end(record)
            found.append((it.get_record_offset(), it.get_record_length(), record_type))
        return found


def truncate_last_member(folder: Path) -> tuple[Path, int]:
    """Cut the WARC file inside its last gzip member; return the file and the member's offset."""
    path = the_warc(folder)
    offset, length, _ = members(path)[-1]
    with open(path, "r+b") as fh:
        fh.truncate(offset + length // 2)
    return path, offset


def test_an_intact_collection_verifies(
    collection: Harvested, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = run_verify(collection.out, capsys)
    assert code == ExitCode.OK and found["ok"] and found["damage"] == []
    records = members(the_warc(collection.out))
    assert found["records"] == len(records)
    assert found["index_lines"] == sum(1 for r in records if r[2] == "response")
    seeded = len(collection.site.public) + 1  # the files and the root (listed/seed.py)
    assert found["captures"] == found["index_lines"] == seeded


def test_a_flipped_payload_byte_is_named_with_its_record_offset(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = collection.copy(tmp_path / "c")
    path = the_warc(folder)
    offset, length, _ = next(m for m in members(path) if m[2] == "response")
    data = bytearray(path.read_bytes())
    # the same record with one payload byte changed, recompressed (as the writer compresses
    # it) to the same length, so every other record stays where the index and the state say
    plain = bytearray(gzip.decompress(bytes(data[offset : offset + length])))
    for position in range(len(plain) - 5, len(plain) - 200, -1):
        changed = bytearray(plain)
        changed[position] ^= 0x01
        packed = gzip_parts((bytes(changed),))
        if len(packed) == length:
            break
    else:
        pytest.fail("no byte flip kept the member's length")
    data[offset : offset + length] = packed
    path.write_bytes(bytes(data))

    code, found = run_verify(folder, capsys)
    assert code == ExitCode.FAILED
    (damage,) = found["damage"]
    assert damage["file"] == str(path) and damage["where"] == f"record at offset {offset}"
    assert "payload" in damage["problem"] and "block" in damage["problem"]


def test_a_flipped_compressed_byte_is_one_record_its_line_and_its_capture(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One byte flipped inside a gzip member in the middle of the file: the walk resumes at
    the next member, so only that record, its index line and its capture are damaged."""
    folder = collection.copy(tmp_path / "c")
    path = the_warc(folder)
    responses = [m for m in members(path) if m[2] == "response"]
    offset, length, _ = responses[len(responses) // 2]
    data = bytearray(path.read_bytes())
    data[offset + length // 2] ^= 0x55
    path.write_bytes(bytes(data))

    code = main(["verify", str(folder), "--quiet"])
    out, err = capsys.readouterr()
    assert code == ExitCode.FAILED and err == ""
    *lines, summary = out.splitlines()
    assert summary.startswith("DAMAGED: 1 WARC files, ")
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"{path}: offset {offset}: ")
    index = [line for line in lines if "/indexes/" in line]
    capture = [line for line in lines if line.startswith(f"{folder / 'state.sqlite'}: capture")]
    assert len(index) == len(capture) == 1
    assert all(f"offset {offset}" in line for line in lines)
    code, found = run_verify(folder, capsys)
    assert found["records"] == len(members(the_warc(collection.out))) - 1


def test_a_truncated_gzip_member_is_named_with_its_offset(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = collection.copy(tmp_path / "c")
    path, offset = truncate_last_member(folder)

    code, found = run_verify(folder, capsys)
    assert code == ExitCode.FAILED
    problems = [d for d in found["damage"] if "gzip member" in d["problem"]]
    assert [(d["file"], d["where"]) for d in problems] == [(str(path), f"offset {offset}")]


def test_a_cdxj_line_pointing_nowhere_is_named(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = collection.copy(tmp_path / "c")
    (index,) = sorted((folder / "indexes").glob("*.cdxj"))
    lines = index.read_text().splitlines(keepends=True)
    key, stamp, block = lines[3].split(" ", 2)
    fields = json.loads(block)
    fields["offset"] = str(int(fields["offset"]) + 1)
    lines[3] = f"{key} {stamp} {json.dumps(fields)}\n"
    index.write_text("".join(lines))

    code, found = run_verify(folder, capsys)
    assert code == ExitCode.FAILED
    (damage,) = found["damage"]
    assert (damage["file"], damage["where"]) == (str(index), "line 4")
    assert f"offset {fields['offset']}" in damage["problem"]


def test_a_state_row_pointing_at_a_missing_record_is_named(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = collection.copy(tmp_path / "c")
    with sqlite3.connect(folder / "state.sqlite") as db:
        (url,) = db.execute("SELECT url FROM resources ORDER BY url LIMIT 1").fetchone()
        db.execute("UPDATE resources SET warc_offset = warc_offset + 3 WHERE url=?", (url,))
    db.close()

    code, found = run_verify(folder, capsys)
    assert code == ExitCode.FAILED
    (damage,) = found["damage"]
    assert damage["file"] == str(folder / "state.sqlite")
    assert damage["where"] == f"capture of {url}" and "no readable record" in damage["problem"]


def test_the_text_output_names_each_damage_on_its_own_line(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = collection.copy(tmp_path / "c")
    path, offset = truncate_last_member(folder)
    code = main(["verify", str(collection.out), str(folder), "--quiet"])
    out = capsys.readouterr().out.splitlines()
    assert code == ExitCode.FAILED
    assert out[0] == f"{path}: offset {offset}: " + out[0].split(": ", 2)[2]
    assert out[-1].startswith("DAMAGED: 2 WARC files")


def test_captures_in_a_file_still_being_written_are_left_for_later(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a running harvest leaves it while it holds the collection's lock: the state points
    into an ``.open`` file that no index covers yet."""
    folder = collection.copy(tmp_path / "c")
    path = the_warc(folder)
    path.rename(path.with_name(path.name + ".open"))
    for index in (folder / "indexes").glob("*.cdxj"):
        index.unlink()
    with CollectionLock(folder):
        code, found = run_verify(folder, capsys)
    assert code == ExitCode.OK and found["damage"] == []
    assert (found["warcs"], found["captures"]) == (0, 0)
