"""Rotating WARC output: size-based rotation, ``.open`` files, one flush per record group.

Modelled on pywb's ``MultiFileWARCWriter`` and built on warcio. Files are WARC/1.1
(ISO 28500:2017), gzip-compressed with one gzip member per record (WARC 1.1, annex D.2),
so every record can be read from its offset alone. A file is written as
``<prefix>-<UTC timestamp>-<serial>-<pid>.warc.gz.open`` and renamed to ``.warc.gz`` when
it is closed; each file starts with a ``warcinfo`` record (section 6.2). The writer builds
its records itself, with its own clock and record IDs: it is a
:class:`~harvester.archive.records.RecordFactory`.

Crash safety: :meth:`RotatingWARCWriter.write_group` hands the whole group to the operating
system before it returns (a killed process loses nothing written), and fsyncs it too when the
writer is ``durable`` (against power loss, at about 4 ms a group); every file is fsynced when
it is finished. The writer holds an advisory ``flock`` on its ``.open`` file. After a crash,
:func:`~harvester.archive.repair.repair_open_files` cuts each unlocked ``.open`` file back to
its last complete record and renames it.

As it writes, the writer makes the CDXJ line of every capture record
(:func:`harvester.archive.cdx.line.capture_line`) and hands a finished file's lines to its
``on_finish`` callback, so the index never has to read the file back.

The writer is not thread-safe: call it from one thread.
"""

from __future__ import annotations

import copy
import fcntl
import logging
import os
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from warcio.recordloader import ArcWarcRecord
from warcio.warcwriter import WARCWriter

from coop_common.component import Component
from harvester.archive.capturegroup import metadata
from harvester.archive.cdx.line import capture_line, line
from harvester.archive.files import OPEN_SUFFIX, WARC_SUFFIX, fsync_dir, rename_new
from harvester.archive.recordbytes import Built
from harvester.archive.records import NO_PAYLOAD_DIGEST_TYPES, WARC_VERSION, RecordFactory
from harvester.archive.repair import repair_open_files
from harvester.clock import as_utc
from harvester.exceptions import ArchiveError

__all__ = ["DEFAULT_MAX_SIZE", "RecordLocation", "RotatingWARCWriter"]

_Record = TypeVar("_Record", ArcWarcRecord, Built)  # a record warcio builds, or one built by hand
log = logging.getLogger(__name__)

GZIP_LEVEL = 6  # zlib's default; warcio's 9 costs more CPU for a few percent of size
DEFAULT_MAX_SIZE = 1_000_000_000


@dataclass(slots=True)
class RecordLocation:
    """Where :meth:`RotatingWARCWriter.write_group` put one record."""

    record_id: str
    filename: str  # the final ``.warc.gz`` name, without ``.open``
    offset: int  # of the record's gzip member
    length: int  # of the record's gzip member
    warc_date: str


class _GzipMembers:
    """What warcio writes a record through: one gzip member per record, streamed.

    warcio's own gzip wrapper compresses at level 9 and flushes the file after every record;
    here the level is zlib's default (6), and the file is flushed once per group, by
    :meth:`RotatingWARCWriter.write_group`. warcio calls ``flush`` at each record's end.
    """

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self._member: Any = None  # zlib's compressor type is not importable for a hint

    def write(self, data: bytes) -> None:
        if self._member is None:
            self._member = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self.fh.write(self._member.compress(data))

    def flush(self) -> None:
        if self._member is not None:
            self.fh.write(self._member.flush())
            self._member = None

    def discard(self) -> None:
        """Forget a record cut off half-written (the file is cut back by the caller)."""
        self._member = None


@dataclass
class _OpenFile:
    """The ``.open`` file being written, with its warcio writer and what that writes through."""

    path: Path
    fh: BinaryIO
    writer: WARCWriter
    members: _GzipMembers
    groups: int = 0
    captures: list[str] = field(default_factory=list)  # CDXJ lines of its capture records

    @property
    def name(self) -> str:
        return self.path.name.removesuffix(OPEN_SUFFIX)


class RotatingWARCWriter(RecordFactory, Component):
    """Writes record groups into size-rotated WARC files; see the module docstring."""

    def __init__(
        self,
        directory: Path,
        *,
        prefix: str = "harvest",
        max_size: int = DEFAULT_MAX_SIZE,
        warcinfo: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        make_id: Callable[[], str] | None = None,
        durable: bool = False,
        on_finish: Callable[[str, list[str]], None] | None = None,
    ) -> None:
        if max_size <= 0:
            raise ValueError(f"max_size must be positive, not {max_size}")
        super().__init__(warcinfo=warcinfo, clock=clock, make_id=make_id)
        self.directory = Path(directory)
        self.prefix = prefix
        self.max_size = max_size
        self.durable = durable
        self._on_finish = on_finish
        self._held = 0
        self._serial = 0
        self._is_open = False
        self._file: _OpenFile | None = None

    @property
    def current_path(self) -> Path | None:
        """The ``.open`` file being written, if any."""
        return self._file.path if self._file else None

    def open(self) -> None:
        """Create the directory and repair ``.open`` files left by a crashed writer."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveError(f"cannot create {self.directory}: {exc}") from exc
        repair_open_files(self.directory)
        self._is_open = True

    def sibling(self) -> RotatingWARCWriter:
        """A writer of the same folder, names, limits, records and index, for another
        process (a fork): open already, with no file of its own yet (its names carry its
        own pid) and no repair, which this writer's :meth:`open` did."""
        twin = copy.copy(self)
        twin._file, twin._held, twin._serial = None, 0, 0
        return twin

    def close(self) -> None:
        """Finish the current file: fsync it and drop its ``.open`` suffix."""
        if self._file is not None:
            self._finish()
        self._is_open = False

    def write_group(
        self,
        records: Sequence[ArcWarcRecord],
        then: Callable[[list[RecordLocation]], Sequence[ArcWarcRecord]] | None = None,
    ) -> list[RecordLocation]:
        """Write records into one file and flush them (fsync when durable); on failure the
        file is cut back.

        ``then`` builds more records of the same group from where the first ones landed (a
        DIDL record that points at its response's offset); they go into the same file.
        """
        return self._in_group(records, then, self._write_records)

    def write_metadata_group(
        self, payloads: Sequence[bytes], content_type: str = "application/xml"
    ) -> list[RecordLocation]:
        """One ``metadata`` record per payload, without a target URI or WARC-Refers-To,
        written as one group as :meth:`write_group` writes it: the records
        :meth:`metadata_record` makes, built by hand (:mod:`harvester.archive.capturegroup`)."""
        return self.write_built(
            [metadata(self.stamp, payload, content_type=content_type) for payload in payloads]
        )

    def write_members(self, records: Sequence[tuple[str, str, bytes]]) -> list[RecordLocation]:
        """Records built elsewhere, each a gzip member (record ID, WARC-Date, member), that
        are not captures (no CDXJ line), written as one group as :meth:`write_group` does."""
        return self.write_built([Built(rid, date, member) for rid, date, member in records])

    def write_built(
        self,
        records: Sequence[Built],
        then: Callable[[list[RecordLocation]], Sequence[Built]] | None = None,
    ) -> list[RecordLocation]:
        """Records built by hand (:mod:`harvester.archive.recordbytes`), written as one group
        as :meth:`write_group` writes its records, ``then`` included; a capture's CDXJ line is
        made from the fields it carries."""
        return self._in_group(records, then, self._write_built)

    def _in_group(
        self,
        records: Sequence[_Record],
        then: Callable[[list[RecordLocation]], Sequence[_Record]] | None,
        write: Callable[[_OpenFile, Sequence[_Record]], list[RecordLocation]],
    ) -> list[RecordLocation]:
        """``records``, then what ``then`` builds from where they landed, into one file as one
        group (flushed, fsynced when durable, cut back on failure)."""
        if not self._is_open:
            raise ArchiveError("the WARC writer is not open")
        if not records:
            return []
        current = self._file_for_group()
        with self._group(current):
            locations = write(current, records)
            if then is not None:
                locations += write(current, then(list(locations)))
        return locations

    def _write_records(
        self, current: _OpenFile, records: Sequence[ArcWarcRecord]
    ) -> list[RecordLocation]:
        return [self._write_record(current, record) for record in records]

    def _write_built(self, current: _OpenFile, records: Sequence[Built]) -> list[RecordLocation]:
        offset, name = current.fh.tell(), current.name
        locations = []
        for built in records:
            current.fh.write(built.member)
            length = len(built.member)
            if built.capture is not None:
                current.captures.append(line(built.capture, built.warc_date, name, offset, length))
            locations.append(RecordLocation(built.record_id, name, offset, length, built.warc_date))
            offset += length
        return locations

    @contextmanager
    def _group(self, current: _OpenFile) -> Iterator[None]:
        """The group written inside is flushed (fsynced when durable), or cut back whole."""
        start, lines = current.fh.tell(), len(current.captures)
        try:
            yield
            current.fh.flush()
            if self.durable:
                os.fsync(current.fh.fileno())
        except OSError as exc:
            self._roll_back(current, start, lines)
            raise ArchiveError(f"cannot write to {current.path}: {exc}") from exc
        except BaseException:
            self._roll_back(current, start, lines)
            raise
        current.groups += 1

    # -- files ----------------------------------------------------------------------

    @contextmanager
    def one_file(self) -> Iterator[None]:
        """Groups written inside go into one file: no rotation until the block ends.

        A caller that marks many groups archived with one state commit makes it inside the
        block. No group then reaches a finished file before the state knows it: after a
        crash, only the open file's groups are matched with the state (the harvest's
        reconcile step). The file may end past ``max_size`` by the block's groups; a block
        that begins with the file full begins a new one.
        """
        if not self._held:
            self._rotate_if_full()
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1

    def full(self) -> bool:
        """Whether the open file has reached ``max_size``: the next group, outside a
        :meth:`one_file` block, starts a new file."""
        current = self._file
        return current is not None and bool(current.groups) and current.fh.tell() >= self.max_size

    def _file_for_group(self) -> _OpenFile:
        if not self._held:
            self._rotate_if_full()
        if self._file is None:
            self._file = self._start_file()
        return self._file

    def _rotate_if_full(self) -> None:
        current = self._file
        if current is not None and self.full():
            log.info("%s reached %d bytes; rotating", current.path, current.fh.tell())
            self._finish()

    def _start_file(self) -> _OpenFile:
        path, fh = self._create_unique()
        members = _GzipMembers(fh)
        writer = _Writer(members, gzip=False, warc_version=WARC_VERSION)
        current = _OpenFile(path, fh, writer, members)
        try:
            self._write_record(current, self.warcinfo_record(current.name))
            fh.flush()
            os.fsync(fh.fileno())
            fsync_dir(self.directory)
        except OSError as exc:
            fh.close()
            raise ArchiveError(f"cannot start {path}: {exc}") from exc
        log.info("started %s", path)
        return current

    def _create_unique(self) -> tuple[Path, BinaryIO]:
        """Create and lock a new ``.open`` file whose name has never been used."""
        stamp = as_utc(self._clock()).strftime("%Y%m%d%H%M%S%f")
        while True:
            name = f"{self.prefix}-{stamp}-{self._serial:05d}-{os.getpid()}{WARC_SUFFIX}"
            self._serial += 1
            path = self.directory / (name + OPEN_SUFFIX)
            if (self.directory / name).exists():
                continue
            try:
                fh = open(path, "xb")  # noqa: SIM115 - kept open until _finish
            except FileExistsError:
                continue
            except OSError as exc:
                raise ArchiveError(f"cannot create {path}: {exc}") from exc
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            if os.fstat(fh.fileno()).st_nlink:
                return path, fh
            fh.close()  # a concurrent repair deleted it before we held the lock

    def _write_record(self, current: _OpenFile, record: ArcWarcRecord) -> RecordLocation:
        offset = current.fh.tell()
        current.writer.write_record(record)
        length = current.fh.tell() - offset
        line = capture_line(record, current.name, offset, length)
        if line is not None:
            current.captures.append(line)
        return RecordLocation(
            record_id=record.rec_headers.get_header("WARC-Record-ID"),
            filename=current.name,
            offset=offset,
            length=length,
            warc_date=record.rec_headers.get_header("WARC-Date"),
        )

    def _roll_back(self, current: _OpenFile, start: int, lines: int) -> None:
        """Cut a half-written group off, so that groups are never split."""
        del current.captures[lines:]
        current.members.discard()
        try:
            current.fh.seek(start)
            current.fh.truncate()
        except OSError:
            log.exception("cannot cut %s back to %d; leaving it for repair", current.path, start)
            current.fh.close()
            self._file = None

    def _finish(self) -> None:
        current, self._file = self._file, None
        if current is None:
            return
        final = current.path.with_name(current.name)
        try:
            current.fh.flush()
            os.fsync(current.fh.fileno())
            rename_new(current.path, final)
            fsync_dir(self.directory)
        except OSError as exc:
            raise ArchiveError(f"cannot finish {current.path}: {exc}") from exc
        finally:
            current.fh.close()
        log.info("finished %s", final)
        if self._on_finish is not None:
            self._on_finish(final.name, current.captures)


class _Writer(WARCWriter):
    """warcio's writer, giving no payload digest to a metadata record (WARC 1.1, 5.9)."""

    NO_PAYLOAD_DIGEST_TYPES = NO_PAYLOAD_DIGEST_TYPES
