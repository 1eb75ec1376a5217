"""Checking that a collection is intact: ``harvester verify DIR...``.

Three checks, each naming what it found damaged:

1. every WARC file (``warcs/*.warc.gz``) read end to end: each gzip member decompressed in
   full and holding exactly one record (so a truncated member is found, which warcio alone
   misses), and each record's ``WARC-Block-Digest`` and ``WARC-Payload-Digest`` recomputed;
2. every line of ``indexes/*.cdxj`` pointing at a readable record of its file, at its
   offset and of its length, whose target URI is the line's URL;
3. every capture the state holds (record id, file, offset) naming a readable record with
   that ``WARC-Record-ID`` at that offset; captures in a ``.open`` file, which a running
   harvest is still writing, are left for a later check.

A gzip member that cannot be decompressed, or does not hold one whole record, is one damage
line: the walk resynchronises at the next gzip member holding a whole record, so the records
after it, and the index lines and captures pointing at them, are checked as usual. Only the
lines and captures pointing into the damaged stretch are reported with it.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from harvester.archive.files import OPEN_SUFFIX
from harvester.archive.repair import Span, spans
from harvester.collection.folder import Collection
from harvester.storage.protocol import State

log = logging.getLogger(__name__)
_READ_SIZE = 1 << 16
STATUSES = (
    *("pending", "archived", "failed", "abandoned", "deleting", "deleted", "gone"),
    *("seed", "loaded"),
)

_UNREADABLE = (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError, ValueError, zlib.error)
Tick = Callable[[int], None]  # bytes read since the last call


@dataclass(frozen=True)
class Damage:
    """One thing found wrong: the file, where in it (a record offset or a line), and what."""

    file: str
    where: str
    problem: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.problem}"


@dataclass(frozen=True)
class Record:
    record_id: str
    uri: str
    length: int


@dataclass
class Verification:
    """What was checked and what was found damaged."""

    warcs: int = 0
    records: int = 0
    index_lines: int = 0
    captures: int = 0
    damage: list[Damage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.damage

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["damage"] = [asdict(d) for d in self.damage]
        data["ok"] = self.ok
        return data


def verify(folders: Sequence[Path], tick: Tick | None = None) -> Verification:
    """Check each collection folder; ``tick`` is told the bytes read as WARCs are read."""
    result = Verification()
    for folder in folders:
        _verify_one(Collection.at(folder), result, tick or (lambda n: None))
    return result


def total_bytes(folders: Sequence[Path]) -> int:
    """The bytes :func:`verify` will read from WARC files, for a progress bar."""
    return sum(p.stat().st_size for f in folders for p in Collection(f).warcs())


def _verify_one(collection: Collection, result: Verification, tick: Tick) -> None:
    damage = result.damage
    records: dict[str, dict[int, Record]] = {}
    for path in collection.warcs():
        records[path.name] = read_warc(path, damage, tick)
        result.warcs += 1
        result.records += len(records[path.name])
    for index in collection.indexes():
        result.index_lines += check_index(index, records, damage)
    with collection.state() as state:
        if state is not None:
            result.captures += check_state(state, collection, records, damage)


# -- 1. the WARC files --------------------------------------------------------------------


def read_warc(path: Path, damage: list[Damage], tick: Tick) -> dict[int, Record]:
    """Every readable record of ``path`` by offset; what is damaged goes into ``damage``.

    A damaged stretch is one entry: the walk resumes at the next whole member after it.
    """
    found: dict[int, Record] = {}
    try:
        with open(path, "rb") as fh:
            for span in spans(fh):
                tick(span.end - span.start)
                if span.fields is None:
                    damage.append(Damage(str(path), f"offset {span.start}", _unreadable(span)))
                    continue
                record = _checked(fh, span, path, damage)
                if record is not None:
                    found[span.start] = record
    except OSError as exc:
        damage.append(Damage(str(path), "file", f"cannot read: {exc.strerror or exc}"))
    return found


def _unreadable(span: Span) -> str:
    length = span.end - span.start
    return f"truncated or corrupt gzip member ({length} bytes not readable)"


def _checked(fh: BinaryIO, span: Span, path: Path, damage: list[Damage]) -> Record | None:
    """The record of one whole member, its digests recomputed; None if warcio cannot read it."""
    fh.seek(span.start)
    where = f"record at offset {span.start}"
    try:
        for record in ArchiveIterator(_Slice(fh, span.end - span.start), check_digests=True):
            while chunk := record.raw_stream.read(_READ_SIZE):
                del chunk
            checker = record.digest_checker
            if checker.passed is False:  # still a record: the index and the state may point at it
                damage.append(Damage(str(path), where, "; ".join(checker.problems)))
            headers = record.rec_headers
            return Record(
                str(headers.get_header("WARC-Record-ID")),
                str(headers.get_header("WARC-Target-URI") or ""),
                span.end - span.start,
            )
    except _UNREADABLE as exc:
        damage.append(Damage(str(path), where, f"unreadable: {' '.join(str(exc).split())[:200]}"))
    return None


class _Slice:
    """The bytes of ``fh`` from where it stands, ``length`` of them: one member for warcio."""

    def __init__(self, fh: BinaryIO, length: int) -> None:
        self._fh, self._left = fh, length

    def read(self, size: int = -1) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        data = self._fh.read(size)
        self._left -= len(data)
        return data


# -- 2. the CDXJ index --------------------------------------------------------------------


def check_index(index: Path, records: dict[str, dict[int, Record]], damage: list[Damage]) -> int:
    """Check every line of one CDXJ file; return how many there were."""
    count = 0
    try:
        with open(index, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if line.strip():
                    count += 1
                    problem = _line_problem(line, records)
                    if problem:
                        damage.append(Damage(str(index), f"line {number}", problem))
    except (OSError, UnicodeDecodeError) as exc:
        damage.append(Damage(str(index), "file", f"cannot read: {exc}"))
    return count


def _line_problem(line: str, records: dict[str, dict[int, Record]]) -> str | None:
    try:
        fields = json.loads(line.split(" ", 2)[2])
        name, offset, length = fields["filename"], int(fields["offset"]), int(fields["length"])
    except (IndexError, KeyError, TypeError, ValueError):
        return "not a CDXJ line of a capture (no filename, offset or length)"
    record = _record_at(name, offset, records)
    if isinstance(record, str):
        return record
    if record.length != length:
        return f"length {length}, but the record at {name} offset {offset} has {record.length}"
    if fields.get("url") and record.uri != fields["url"]:
        return f"url {fields['url']}, but the record at {name} offset {offset} is {record.uri}"
    return None


def _record_at(name: str, offset: int, records: dict[str, dict[int, Record]]) -> Record | str:
    """The readable record at ``offset`` of WARC file ``name``, or why there is none."""
    if name not in records:
        return f"points at {name}, which is not in warcs/"
    record = records[name].get(offset)
    if record is None:
        return f"points at no readable record: {name} offset {offset}"
    return record


# -- 3. the state -------------------------------------------------------------------------


def check_state(
    state: State,
    collection: Collection,
    records: dict[str, dict[int, Record]],
    damage: list[Damage],
) -> int:
    """Check every capture the state points at; return how many there were."""
    count = 0
    being_written = {p.name.removesuffix(OPEN_SUFFIX) for p in collection.open_warcs()}
    for site in state.sites():
        for res in state.resources(site, STATUSES):
            if not res.record_id or not res.warc_file or res.warc_offset is None:
                continue
            if res.warc_file in being_written:  # a harvest is writing it: not checked yet
                continue
            count += 1
            problem = _capture_problem(res.record_id, res.warc_file, res.warc_offset, records)
            if problem:
                where = f"capture of {res.url}"
                damage.append(Damage(str(collection.state_path), where, problem))
    return count


def _capture_problem(
    record_id: str, name: str, offset: int, records: dict[str, dict[int, Record]]
) -> str | None:
    record = _record_at(name, offset, records)
    if isinstance(record, str):
        return record
    if record.record_id != record_id:
        return f"record {record_id}, but {name} offset {offset} holds {record.record_id}"
    return None
