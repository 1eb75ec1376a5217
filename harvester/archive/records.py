"""The WARC/1.1 records the harvester writes (ISO 28500:2017, section 6), built with warcio.

A :class:`RecordFactory` builds ``warcinfo``, ``request``, ``response``, ``resource``,
``metadata`` and ``revisit`` records, each with a new ``WARC-Record-ID`` (``make_id``), the
clock's ``WARC-Date`` with microseconds, and a block digest. Payloads may be bytes or a
stream; a stream that cannot seek is spooled first. Writing the records out is
:mod:`harvester.archive.warc`'s job.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from io import BytesIO
from typing import BinaryIO

from warcio.recordbuilder import RecordBuilder
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from harvester.archive.randomids import fresh_uuid
from harvester.archive.storedhead import StoredHead
from harvester.clock import as_utc, utcnow

__all__ = [
    "NO_PAYLOAD_DIGEST_TYPES",
    "REVISIT_PROFILES",
    "WARC_VERSION",
    "Builder",
    "RecordFactory",
    "Revisit",
]

WARC_VERSION = "1.1"
REVISIT_PROFILES: Mapping[str, str] = {
    "identical-payload-digest": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
    "server-not-modified": "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
}


@dataclass(frozen=True)
class Revisit:
    """What a revisit record says of the capture it revisits; ``head`` is the HTTP head its
    block holds when not the exchange's own (a 304's: the stored head it freshens,
    :mod:`harvester.archive.storedhead`)."""

    profile: str  # a key of REVISIT_PROFILES
    refers_to: str | None  # its WARC-Record-ID
    refers_to_uri: str
    refers_to_date: str
    payload_digest: str
    head: StoredHead | None = None

    def __post_init__(self) -> None:
        if self.profile not in REVISIT_PROFILES:
            raise ValueError(f"unknown revisit profile {self.profile!r}")

    def fields(self, ip: str | None) -> dict[str, str | None]:
        """Its record's WARC fields, sent from the server at ``ip`` (None: a field left out)."""
        return {
            "WARC-IP-Address": ip,
            "WARC-Profile": REVISIT_PROFILES[self.profile],
            "WARC-Refers-To": self.refers_to,
            "WARC-Refers-To-Target-URI": self.refers_to_uri,
            "WARC-Refers-To-Date": self.refers_to_date,
            "WARC-Payload-Digest": self.payload_digest,
        }


WARCINFO_DEFAULTS: Mapping[str, str] = {
    "format": "WARC File Format 1.1",
    "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
}

_SPOOL_SIZE = 1 << 20
# Records whose block has no well-defined payload, so no WARC-Payload-Digest (section 5.9):
# warcio's list, and metadata.
NO_PAYLOAD_DIGEST_TYPES = ("warcinfo", "revisit", "metadata")


class Builder(RecordBuilder):
    """warcio's record builder, giving no payload digest to a metadata record."""

    NO_PAYLOAD_DIGEST_TYPES = NO_PAYLOAD_DIGEST_TYPES


class RecordFactory:
    """Builds WARC records; ``warcinfo`` holds the fields of every file's warcinfo record,
    completed with the format, the specification and this host's name."""

    def __init__(
        self,
        *,
        warcinfo: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        make_id: Callable[[], str] | None = None,
    ) -> None:
        self._warcinfo = _warcinfo_fields(warcinfo)
        self._clock = clock or utcnow
        self._date = _warc_now if clock is None else self._clock_date
        self._make_id = make_id or _new_record_id
        self._builder = Builder(warc_version=WARC_VERSION)

    def stamp(self) -> tuple[str, str]:
        """A new record's (WARC-Record-ID, WARC-Date), from this factory's IDs and clock."""
        return self._make_id(), self._date()

    def _clock_date(self) -> str:
        return _warc_date(self._clock())

    def warcinfo_record(self, filename: str) -> ArcWarcRecord:
        """The ``warcinfo`` record (section 6.2) that begins the file ``filename``."""
        body = "".join(f"{k}: {v}\r\n" for k, v in self._warcinfo.items() if v)
        return self._build(
            "warcinfo",
            "",
            body.encode("utf-8"),
            content_type="application/warc-fields",
            headers={"WARC-Filename": filename},
        )

    def request_record(
        self,
        uri: str,
        http_headers: StatusAndHeaders,
        body: bytes = b"",
        *,
        concurrent_to: str | None = None,
        ip: str | None = None,
        date: str | None = None,
    ) -> ArcWarcRecord:
        """A ``request`` record; ``concurrent_to`` is the response's WARC-Record-ID, ``date``
        its WARC-Date, shared by the request (section 5.4)."""
        headers = {"WARC-Concurrent-To": concurrent_to, "WARC-IP-Address": ip, "WARC-Date": date}
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
        self, uri: str, http_headers: StatusAndHeaders | None, of: Revisit, ip: str | None = None
    ) -> ArcWarcRecord:
        """A ``revisit`` record (section 6.7) of the capture ``of`` names."""
        headers = of.fields(ip)
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
            "WARC-Date": self._date(),
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


def _new_record_id() -> str:
    return f"<urn:uuid:{fresh_uuid()}>"


def _warc_date(moment: datetime) -> str:
    """A WARC/1.1 date with microseconds, e.g. ``2024-05-01T12:00:00.000000Z``.

    >>> _warc_date(datetime(2024, 5, 1, 12))
    '2024-05-01T12:00:00.000000Z'
    """
    # isoformat of a UTC time ends in "+00:00"; a fifth of strftime's time
    return as_utc(moment).isoformat(timespec="microseconds")[:-6] + "Z"


def _warc_now() -> str:
    """:func:`_warc_date` of the real clock, read as nanoseconds: each second is formatted
    once, a fourth of the time of a datetime's formatting."""
    seconds, micros = divmod(time.time_ns() // 1000, 1_000_000)
    return f"{_second(seconds)}.{micros:06d}Z"


@functools.lru_cache(maxsize=2)
def _second(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


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
