"""WARC records built by hand, each as one finished gzip member: the capture path's records.

The ``response``, ``revisit``, ``request`` and ``metadata`` records of a fetched resource's
group are the same bytes, once decompressed, that warcio's builder and writer make for
:class:`~harvester.archive.records.RecordFactory`'s records: the same header fields in the
same order (the given ones, then ``WARC-Payload-Digest`` unless a revisit, then
``WARC-Block-Digest``, ``Content-Type`` and ``Content-Length``), the HTTP block as warcio
encodes it, the same digests. warcio's header objects, its passes over the payload to digest
it and its writer cost several times the record itself (``bench/README.md``, ``## harvest``).

Records whose HTTP head is not ASCII are left to warcio, which percent-encodes it
(:func:`http_block`); everything else is plain string work. Each member is compressed by
ISA-L's deflate (``isal``) at its level 1: 3 % larger than zlib at level 6 on the benchmark
site's records, in a quarter of the time (``bench/README.md``, ``## harvest``), and without
joining a large payload to its head first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from isal import isal_zlib

from harvester.archive.cdxline import CaptureFields

__all__ = [
    "EMPTY_DIGEST",
    "Built",
    "Field",
    "gzip_parts",
    "http_block",
    "record_member",
    "sha1_base32",
    "warc_digest",
]

Field = tuple[str, str]

ISAL_LEVEL = 1  # ISA-L's levels are 0-3; at 1, about the size zlib makes at 6
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"  # RFC 4648's base 32
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # every 10 bits as two letters
_SHIFTS = range(150, -1, -10)  # a SHA-1 digest's 160 bits, ten at a time


@dataclass(frozen=True, slots=True)
class Built:
    """One record as a gzip member, with its ID and date; a capture also has its CDXJ fields."""

    record_id: str  # with its ``<>``
    warc_date: str
    member: bytes
    capture: CaptureFields | None = None


def sha1_base32(digest: bytes) -> str:
    """A SHA-1 digest in base 32, as ``base64.b32encode`` spells it (160 bits: no padding),
    in a tenth of its time.

    >>> import base64; d = hashlib.sha1(b"x").digest()
    >>> sha1_base32(d) == base64.b32encode(d).decode()
    True
    """
    number = int.from_bytes(digest, "big")
    return "".join([_PAIRS[(number >> shift) & 1023] for shift in _SHIFTS])


def warc_digest(data: bytes) -> str:
    """``data``'s SHA-1 as a WARC digest field spells it: ``sha1:`` and base 32."""
    return "sha1:" + sha1_base32(hashlib.sha1(data).digest())


EMPTY_DIGEST = warc_digest(b"")


def http_block(protocol: str, statusline: str, fields: Sequence[Field]) -> bytes | None:
    """An HTTP message's head as warcio stores it: ``protocol statusline``, the fields, an
    empty line. For a request, ``protocol`` is the method and ``statusline`` the rest of the
    request line. None for a head that is not ASCII: warcio percent-encodes its fields, in
    the block and in the header values it reports, so such records are left to warcio."""
    first = f"{protocol} {statusline}" if protocol and statusline else protocol or statusline
    text = (f"{first}\r\n" if first else "") + "".join(
        [f"{name}: {value}\r\n" for name, value in fields]
    )
    return text.encode("ascii") + b"\r\n" if text.isascii() else None


def record_member(
    warc_type: str,
    stamp: tuple[str, str],
    target_uri: str,
    fields: Sequence[Field],
    *,
    content_type: str,
    http: bytes = b"",
    payload: bytes = b"",
    payload_digest: str | None = None,
) -> bytes:
    """One record as a gzip member; ``stamp`` is its (WARC-Record-ID, WARC-Date).

    ``fields`` follow WARC-Target-URI (left out when ``target_uri`` is empty); the block is
    ``http`` then ``payload``. WARC-Payload-Digest is ``payload_digest`` when the caller knows
    it already, else computed from ``payload``. A revisit has an HTTP block and no payload,
    and gets no WARC-Payload-Digest here: its ``fields`` carry the original's.
    """
    if warc_type == "revisit":
        if payload or not http:
            raise ValueError("a revisit record has an HTTP block and no payload")
        payload_field = None
    else:
        payload_field = payload_digest or warc_digest(payload)
    length = len(http) + len(payload)
    lines = [
        f"WARC/1.1\r\nWARC-Type: {warc_type}\r\nWARC-Record-ID: {stamp[0]}\r\n"
        f"WARC-Date: {stamp[1]}\r\n"
    ]
    if target_uri:
        lines.append(f"WARC-Target-URI: {target_uri}\r\n")
    lines += [f"{name}: {value}\r\n" for name, value in fields]
    if payload_field is not None:
        lines.append(f"WARC-Payload-Digest: {payload_field}\r\n")
    lines.append(
        f"WARC-Block-Digest: {_block_digest(http, payload) if http else payload_field}\r\n"
    )
    lines.append(f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n")
    return gzip_parts(("".join(lines).encode("utf-8"), http, payload, b"\r\n\r\n"))


def _block_digest(http: bytes, payload: bytes) -> str:
    digest = hashlib.sha1(http)
    digest.update(payload)
    return "sha1:" + sha1_base32(digest.digest())


def gzip_parts(parts: tuple[bytes, ...]) -> bytes:
    """The parts as one gzip member, without joining them first (a payload may be large).

    >>> import gzip; gzip.decompress(gzip_parts((b"WARC/", b"1.1"))) == b"WARC/1.1"
    True
    """
    compressor = isal_zlib.compressobj(ISAL_LEVEL, isal_zlib.DEFLATED, 16 + isal_zlib.MAX_WBITS)
    return b"".join([*map(compressor.compress, parts), compressor.flush()])
