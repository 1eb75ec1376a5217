"""Rotating WARC output: record builders, size-based rotation and ``.open`` files.

Modelled on pywb's ``MultiFileWARCWriter`` and built on warcio. Files are WARC/1.1
(ISO 28500:2017), gzip-compressed with one gzip member per record (WARC 1.1, annex D.2),
so every record can be read from its offset alone. A file is written as
``<prefix>-<UTC timestamp>-<serial>-<pid>.warc.gz.open`` and renamed to ``.warc.gz`` when
it is closed; each file starts with a ``warcinfo`` record (section 6.2).

Crash safety: :meth:`RotatingWARCWriter.write_group` hands the whole group to the operating
system before it returns (a killed process loses nothing written), and fsyncs it too when the
writer is ``durable`` (against power loss, at about 4 ms a group); every file is fsynced when
it is finished. The writer holds an advisory ``flock`` on its ``.open`` file. After a crash,
:func:`repair_open_files` cuts each unlocked ``.open`` file back to its last complete
record and renames it; it and :func:`verify_warc` live in :mod:`harvester.archive.repair`.

As it writes, the writer makes the CDXJ line of every capture record
(:func:`harvester.archive.cdxline.capture_line`) and hands a finished file's lines to its
``on_finish`` callback, so the index never has to read the file back.

The writer is not thread-safe: call it from one thread.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import socket
import tempfile
import uuid
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from warcio.recordbuilder import RecordBuilder
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.archive.cdxline import capture_line
from harvester.archive.files import OPEN_SUFFIX, WARC_SUFFIX, fsync_dir, rename_new
from harvester.archive.repair import repair_open_files, verify_warc
from harvester.clock import utcnow
from harvester.exceptions import ArchiveError

__all__ = [
    "DEFAULT_MAX_SIZE",
    "REVISIT_PROFILES",
    "WARC_VERSION",
    "RecordLocation",
    "RotatingWARCWriter",
    "repair_open_files",
    "verify_warc",
]

log = logging.getLogger(__name__)

WARC_VERSION = "1.1"
GZIP_LEVEL = 6  # zlib's default; warcio's 9 costs more CPU for a few percent of size
DEFAULT_MAX_SIZE = 1_000_000_000
REVISIT_PROFILES: Mapping[str, str] = {
    "identical-payload-digest": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
    "server-not-modified": "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
}
WARCINFO_DEFAULTS: Mapping[str, str] = {
    "format": "WARC File Format 1.1",
    "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
}

_SPOOL_SIZE = 1 << 20


@dataclass(frozen=True)
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


class RotatingWARCWriter:
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
        self.directory = Path(directory)
        self.prefix = prefix
        self.max_size = max_size
        self._warcinfo = _warcinfo_fields(warcinfo)
        self._clock = clock or utcnow
        self._make_id = make_id or _new_record_id
        self.durable = durable
        self._on_finish = on_finish
        self._held = 0
        self._builder = RecordBuilder(warc_version=WARC_VERSION)
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

    def close(self) -> None:
        """Finish the current file: fsync it and drop its ``.open`` suffix."""
        if self._file is not None:
            self._finish()
        self._is_open = False

    def __enter__(self) -> RotatingWARCWriter:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

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
        if not self._is_open:
            raise ArchiveError("the WARC writer is not open")
        if not records:
            return []
        current = self._file_for_group()
        start, lines = current.fh.tell(), len(current.captures)
        try:
            locations = [self._write_record(current, record) for record in records]
            if then is not None:
                locations += [self._write_record(current, r) for r in then(list(locations))]
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
        return locations

    # -- record builders ------------------------------------------------------------

    def request_record(
        self,
        uri: str,
        http_headers: StatusAndHeaders,
        body: bytes = b"",
        *,
        concurrent_to: str | None = None,
        ip: str | None = None,
    ) -> ArcWarcRecord:
        """A ``request`` record; ``concurrent_to`` is the response's WARC-Record-ID."""
        headers = {"WARC-Concurrent-To": concurrent_to, "WARC-IP-Address": ip}
        return self._build("request", uri, body, http_headers=http_headers, headers=headers)

    def response_record(
        self,
        uri: str,
        http_headers: StatusAndHeaders,
        payload: BinaryIO | bytes,
        *,
        ip: str | None = None,
        truncated: str | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> ArcWarcRecord:
        """A ``response`` record; ``truncated`` is a WARC-Truncated reason such as "length"."""
        headers = {"WARC-IP-Address": ip, "WARC-Truncated": truncated, **(extra or {})}
        return self._build("response", uri, payload, http_headers=http_headers, headers=headers)

    def resource_record(
        self,
        uri: str,
        content_type: str,
        payload: bytes,
        *,
        extra: Mapping[str, str] | None = None,
    ) -> ArcWarcRecord:
        """A ``resource`` record: content not obtained as an HTTP response."""
        return self._build("resource", uri, payload, content_type=content_type, headers=extra)

    def metadata_record(
        self,
        payload: bytes,
        *,
        content_type: str = "application/xml",
        refers_to: str | None = None,
        target_uri: str | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> ArcWarcRecord:
        """A ``metadata`` record, without WARC-Target-URI unless one is given.

        WARC 1.1 lets a metadata record go without one (section 5.4, WARC-Target-URI);
        with one, replay indexers would list the record as a capture of that URL.
        """
        headers = {"WARC-Refers-To": refers_to, **(extra or {})}
        uri = target_uri or ""
        return self._build("metadata", uri, payload, content_type=content_type, headers=headers)

    def revisit_record(
        self,
        uri: str,
        http_headers: StatusAndHeaders | None,
        *,
        refers_to_uri: str,
        refers_to_date: str,
        payload_digest: str,
        profile: str = "identical-payload-digest",
        refers_to: str | None = None,
    ) -> ArcWarcRecord:
        """A ``revisit`` record (section 6.7); ``profile`` is a key of REVISIT_PROFILES."""
        if profile not in REVISIT_PROFILES:
            raise ValueError(f"unknown revisit profile {profile!r}")
        headers = {
            "WARC-Profile": REVISIT_PROFILES[profile],
            "WARC-Refers-To": refers_to,
            "WARC-Refers-To-Target-URI": refers_to_uri,
            "WARC-Refers-To-Date": refers_to_date,
            "WARC-Payload-Digest": payload_digest,
        }
        record = self._build("revisit", uri, b"", http_headers=http_headers, headers=headers)
        if http_headers is None:
            record.content_type = None  # an empty block has no type
        return record

    def _build(
        self,
        record_type: str,
        uri: str,
        payload: BinaryIO | bytes,
        *,
        http_headers: StatusAndHeaders | None = None,
        content_type: str = "",
        headers: Mapping[str, str | None] | None = None,
    ) -> ArcWarcRecord:
        warc_headers = {
            "WARC-Type": record_type,
            "WARC-Record-ID": self._make_id(),
            "WARC-Date": _warc_date(self._clock()),
        }
        if uri:
            warc_headers["WARC-Target-URI"] = uri
        warc_headers.update({k: v for k, v in (headers or {}).items() if v is not None})
        stream, length = _as_stream(payload)
        record = self._builder.create_warc_record(
            uri,
            record_type,
            payload=stream,
            length=length,
            warc_content_type=content_type,
            warc_headers_dict=warc_headers,
            http_headers=http_headers,
        )
        self._builder.ensure_digest(record, block=True, payload=False)
        return record

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
        writer = WARCWriter(members, gzip=False, warc_version=WARC_VERSION)
        current = _OpenFile(path, fh, writer, members)
        try:
            self._write_record(current, self._warcinfo_record(current.name))
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
        stamp = _utc(self._clock()).strftime("%Y%m%d%H%M%S%f")
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

    def _warcinfo_record(self, filename: str) -> ArcWarcRecord:
        body = "".join(f"{k}: {v}\r\n" for k, v in self._warcinfo.items() if v)
        return self._build(
            "warcinfo",
            "",
            body.encode("utf-8"),
            content_type="application/warc-fields",
            headers={"WARC-Filename": filename},
        )

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


# -- small helpers ----------------------------------------------------------------------


def _new_record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _warc_date(moment: datetime) -> str:
    """A WARC/1.1 date with microseconds, e.g. ``2024-05-01T12:00:00.000000Z``."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _warcinfo_fields(fields: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(fields or {})
    for name, value in WARCINFO_DEFAULTS.items():
        merged.setdefault(name, value)
    merged.setdefault("hostname", socket.gethostname())
    return merged


def _as_stream(payload: BinaryIO | bytes) -> tuple[BinaryIO, int]:
    """A seekable stream over ``payload`` and the number of bytes left in it."""
    if isinstance(payload, bytes | bytearray | memoryview):
        return BytesIO(payload), len(payload)
    if not payload.seekable():
        spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_SIZE)  # noqa: SIM115
        shutil.copyfileobj(payload, spool)
        spool.seek(0)
        payload = spool  # type: ignore[assignment]
    start = payload.tell()
    end = payload.seek(0, os.SEEK_END)
    payload.seek(start)
    return payload, end - start
