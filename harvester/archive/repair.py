"""Crash repair and verification of WARC files, by walking their gzip members.

Every record is its own gzip member (WARC 1.1, annex D.2), so a file cut short by a crash can
be repaired by keeping its complete members. :func:`repair_open_files` cuts each ``.open``
file that no writer holds locked (an advisory ``flock``) back to its last complete record, or
to its last complete group, and renames it; a file left with nothing but its ``warcinfo`` is
deleted. :func:`verify_warc` decompresses every member in full, checks it holds exactly one
record and checks the record digests, because warcio does not notice a truncated last member
(warcio issue #138). :func:`spans` walks every member of a file for ``verify``, resuming after
a damaged one at the next member that holds a whole record.
"""

from __future__ import annotations

import fcntl
import logging
import os
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from harvester.archive.files import OPEN_SUFFIX, WARC_SUFFIX, fsync_dir, rename_new
from harvester.exceptions import ArchiveError

__all__ = ["Span", "repair_open_files", "spans", "verify_warc"]

log = logging.getLogger(__name__)

# Compressed bytes read at a time while walking gzip members; deflate expands at most
# ~1000:1, so this also bounds the memory one decompress call can take (~16 MiB).
_READ_SIZE = 1 << 14
# Enough of a decompressed member to hold its WARC header block.
_HEAD_SIZE = 1 << 16
# How every gzip member starts: its magic number and the deflate method.
_GZIP_MAGIC = b"\x1f\x8b\x08"


GroupEnd = Callable[[Mapping[str, str]], bool]


@dataclass(frozen=True)
class _Member:
    """One complete gzip member: where it ends and the WARC header of the record it holds."""

    end: int
    fields: Mapping[str, str] | None  # names lower-cased; None: not exactly one whole record

    @property
    def record_type(self) -> str | None:
        return None if self.fields is None else self.fields.get("warc-type") or None


def repair_open_files(directory: Path, group_end: GroupEnd | None = None) -> list[Path]:
    """Cut leftover, unlocked ``.open`` files back to their last complete record.

    With ``group_end``, cut further, back to the last record whose WARC header fields (names
    lower-cased) it says end a group (the harvester's is ``recorder.ends_group``), so that no
    half group survives. Each file is renamed to ``.warc.gz``, or deleted when no record but
    warcinfo survives. Returns the repaired files.
    """
    repaired = []
    for path in sorted(Path(directory).glob(f"*{WARC_SUFFIX}{OPEN_SUFFIX}")):
        try:
            final = _repair(path, group_end)
        except OSError as exc:
            raise ArchiveError(f"cannot repair {path}: {exc}") from exc
        if final is not None:
            repaired.append(final)
    return repaired


def _repair(path: Path, group_end: GroupEnd | None = None) -> Path | None:
    try:
        fh = open(path, "r+b")  # noqa: SIM115 - closed below, after the rename
    except FileNotFoundError:
        return None  # finished by its writer meanwhile
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("%s is being written; not repairing it", path)
            return None
        members = _complete_members(fh)
        if group_end is not None:
            members = _whole_groups(members, group_end)
        if all(m.record_type == "warcinfo" for m in members):
            path.unlink()
            log.warning("deleted %s: no complete record after warcinfo", path)
            return None
        end, size = members[-1].end, os.fstat(fh.fileno()).st_size
        fh.truncate(end)
        os.fsync(fh.fileno())
        final = path.with_name(path.name.removesuffix(OPEN_SUFFIX))
        rename_new(path, final)
    fsync_dir(path.parent)
    log.warning("repaired %s: kept %d records, cut %d bytes", final, len(members), size - end)
    return final


def _whole_groups(members: list[_Member], group_end: GroupEnd) -> list[_Member]:
    """The members up to the last one that ends a group (or the warcinfo)."""
    for last in range(len(members) - 1, -1, -1):
        fields = members[last].fields or {}
        if fields.get("warc-type") == "warcinfo" or group_end(fields):
            return members[: last + 1]
    return []


def _complete_members(fh: BinaryIO) -> list[_Member]:
    members = []
    for member in _members(fh):
        if member.record_type is None:
            break
        members.append(member)
    return members


def verify_warc(path: Path) -> int:
    """Check every gzip member, record and digest of a ``.warc.gz``; return the record count.

    Raises ArchiveError on a truncated or corrupt member, a member not holding exactly
    one record, an unreadable record or a digest mismatch.
    """
    try:
        with open(path, "rb") as fh:
            members = _count_members(fh, path)
            fh.seek(0)
            records = _count_records(fh, path)
    except OSError as exc:
        raise ArchiveError(f"cannot read {path}: {exc}") from exc
    if records != members:
        raise ArchiveError(f"{path}: {members} gzip members but {records} records")
    return records


def _count_members(fh: BinaryIO, path: Path) -> int:
    count = end = 0
    for member in _members(fh):
        if member.record_type is None:
            raise ArchiveError(f"{path}: the member ending at {member.end} is not one record")
        count, end = count + 1, member.end
    if end != os.fstat(fh.fileno()).st_size:
        raise ArchiveError(f"{path}: truncated or corrupt gzip member at offset {end}")
    return count


def _count_records(fh: BinaryIO, path: Path) -> int:
    count = 0
    try:
        for record in ArchiveIterator(fh, check_digests=True):
            while record.raw_stream.read(_READ_SIZE):
                pass
            if record.digest_checker.passed is False:
                problems = "; ".join(record.digest_checker.problems)
                raise ArchiveError(f"{path}: record {count}: {problems}")
            count += 1
    except (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError, ValueError) as exc:
        raise ArchiveError(f"{path}: record {count}: {exc}") from exc
    return count


@dataclass(frozen=True)
class Span:
    """A stretch of a ``.warc.gz``: one gzip member holding one whole WARC record (``fields``,
    names lower-cased), or bytes that hold none (``fields`` None: corrupt, truncated, or not
    exactly one record)."""

    start: int
    end: int
    fields: Mapping[str, str] | None


def spans(fh: BinaryIO) -> Iterator[Span]:
    """Walk ``fh`` from its start to its end, member by member.

    After a member that is not one whole record the walk resynchronises: it resumes at the
    next gzip header from which a member holding one whole record inflates, so one damaged
    record hides none of the records after it.
    """
    size = os.fstat(fh.fileno()).st_size
    offset = 0
    while offset < size:
        member = _member_at(fh, offset)
        if member is not None and member.record_type is not None:
            yield Span(offset, member.end, member.fields)
            offset = member.end
            continue
        following = _next_record(fh, offset + 1, size)
        yield Span(offset, following, None)
        offset = following


def _member_at(fh: BinaryIO, offset: int) -> _Member | None:
    """The member starting at ``offset``, with its end as an offset in the file."""
    fh.seek(offset)
    inflated = _inflate_member(fh, fh.read(_READ_SIZE))
    if inflated is None:
        return None
    consumed, head, size, _ = inflated
    return _Member(offset + consumed, _record_fields(head, size))


def _next_record(fh: BinaryIO, position: int, size: int) -> int:
    """The offset of the first gzip member at or after ``position`` holding one whole record,
    or ``size`` when there is none."""
    while position < size:
        fh.seek(position)
        block = fh.read(_READ_SIZE + len(_GZIP_MAGIC) - 1)
        found = block.find(_GZIP_MAGIC)
        if found < 0:
            position += _READ_SIZE
            continue
        candidate = position + found
        member = _member_at(fh, candidate)
        if member is not None and member.record_type is not None:
            return candidate
        position = candidate + 1
    return size


def _members(fh: BinaryIO) -> Iterator[_Member]:
    """Walk the gzip members of ``fh``; stop at the end or at a truncated or corrupt one."""
    offset, data = 0, b""
    # A member that ends exactly where a read ended leaves no bytes over: read on, since
    # only an empty read is the end of the file.
    while data or (data := fh.read(_READ_SIZE)):
        inflated = _inflate_member(fh, data)
        if inflated is None:
            return
        consumed, head, size, data = inflated
        offset += consumed
        yield _Member(offset, _record_fields(head, size))


def _inflate_member(fh: BinaryIO, data: bytes) -> tuple[int, bytes, int, bytes] | None:
    """Decompress the member starting at ``data``.

    Returns its compressed length, the head of its content, the content size and the
    bytes read past its end; None when it is truncated or corrupt (CRC included).
    """
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    head = bytearray()
    consumed = size = 0
    while not inflater.eof:
        if not data:
            data = fh.read(_READ_SIZE)
            if not data:
                return None
        try:
            out = inflater.decompress(data)
        except zlib.error:
            return None
        size += len(out)
        head += out[: max(0, _HEAD_SIZE - len(head))]
        consumed += len(data) - len(inflater.unused_data)
        data = inflater.unused_data  # empty until the member ends
    return consumed, bytes(head), size, data


def _record_fields(head: bytes, size: int) -> dict[str, str] | None:
    """The WARC header fields if the content is exactly one complete WARC record, else None."""
    end = head.find(b"\r\n\r\n")
    if end < 0 or not head.startswith(b"WARC/"):
        return None
    fields = {}
    for line in head[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    try:
        length = int(fields["content-length"])
    except (KeyError, ValueError):
        return None
    if size != end + 4 + length + 4:  # header block, CRLF CRLF, content block, CRLF CRLF
        return None
    return fields
