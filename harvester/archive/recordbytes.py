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
joining a large payload to its head first. A large payload is compressed a mebibyte at a
time, and a mebibyte that does not compress (JPEG, video, ZIP: most of a site's bytes) is
stored as it is, in deflate's stored blocks: deflating random bytes took 2.3 ms a MiB to
save nothing, storing them 0.3 (:func:`payload_blocks`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from isal import isal_zlib

from harvester.archive.cdx.line import CaptureFields

__all__ = [
    "EMPTY_DIGEST",
    "ONE_SHOT_BYTES",
    "Built",
    "Deflated",
    "Field",
    "deflated",
    "gzip_parts",
    "http_block",
    "large_deflated",
    "record_member",
    "sha1_base32",
    "warc_digest",
]

Field = tuple[str, str]

ISAL_LEVEL = 1  # ISA-L's levels are 0-3; at 1, about the size zlib makes at 6
GZIP_WBITS = 16 + isal_zlib.MAX_WBITS  # a gzip header and trailer
ONE_SHOT_BYTES = 1 << 16  # records up to this are compressed in one call (bench/README.md)
CHUNK_BYTES = 1 << 20  # a large payload is compressed, or stored, this much at a time
PROBE_BYTES = 1 << 14  # ... its first this many bytes deflated first, to see if they shrink
STORE_ABOVE = 0.97  # ... by less than 3 %: then the chunk is stored
_STORED_MAX = 0xFFFF  # the most bytes a stored block holds
RAW_WBITS = -isal_zlib.MAX_WBITS  # deflate blocks without a header or trailer
GZIP_HEADER = bytes.fromhex("1f8b08000000000000ff")  # as ISA-L writes it: no name, no time
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"  # RFC 4648's base 32
NO_PAYLOAD_TYPES = frozenset({"metadata", "warcinfo"})  # no well-defined payload (WARC 1.1, 5.9)
_LETTERS = bytes(_ALPHABET[i] if i < 32 else 0 for i in range(256))  # 5 bits to its letter


def _lanes(lane: int, width: int) -> tuple[int, int]:
    """Masks of a 256-bit number cut into ``lane``-bit lanes: each lane's low ``width`` bits,
    and the ``width`` bits above them."""
    low = sum(((1 << width) - 1) << start for start in range(0, 256, lane))
    return low, low << width


_HALF = (1 << 80) - 1
# The digest's 160 bits, first cut into 2 groups of 80 bits in 128-bit lanes; each step then
# moves the upper half of every group up by ``shift``, into a lane half as wide: 4 x 40 bits
# in 64-bit lanes, 8 x 20 in 32, 16 x 10 in 16, 32 x 5 in 8 (one byte each).
_SPREAD = [(*_lanes(lane, lane * 5 // 16), lane * 3 // 16) for lane in (128, 64, 32, 16)]


@dataclass(slots=True)
class Built:
    """One record as a gzip member, with its ID and date; a capture also has its CDXJ fields."""

    record_id: str  # with its ``<>``
    warc_date: str
    member: bytes
    capture: CaptureFields | None = None


@dataclass(frozen=True, slots=True)
class Deflated:
    """A payload compressed on its own, to sit inside a record's gzip member: deflate blocks
    that end on a byte boundary and are not the last (a sync flush), with the payload's
    CRC-32 and length. Made away from the writer's thread (:func:`deflated`)."""

    blocks: bytes
    crc: int
    length: int


def deflated(payload: bytes) -> Deflated:
    """``payload`` compressed as :class:`Deflated`: a gzip member made with it
    (:func:`record_member`) inflates to the same bytes as one compressed whole."""
    return Deflated(payload_blocks(payload), isal_zlib.crc32(payload), len(payload))


def large_deflated(payload: bytes) -> Deflated | None:
    """:func:`deflated` for a payload above :data:`ONE_SHOT_BYTES`; None for a smaller one,
    which is compressed with its record's head in one call (:func:`gzip_parts`)."""
    return deflated(payload) if len(payload) > ONE_SHOT_BYTES else None


def payload_blocks(payload: bytes) -> bytes:
    """``payload`` as deflate blocks that end byte-aligned and are not the last, made
    :data:`CHUNK_BYTES` at a time: a chunk's first :data:`PROBE_BYTES` are compressed on
    their own, and if that saved less than 3 % the chunk is stored instead, else the rest of
    it is compressed after them (each part's blocks refer back only within the part: a
    loss of 32 KiB of history twice a MiB).

    >>> import os, zlib
    >>> text, noise = b"compressible " * 100_000, os.urandom(3 * CHUNK_BYTES)
    >>> inflate = lambda blocks: zlib.decompressobj(-15).decompress(blocks)
    >>> [inflate(payload_blocks(p)) == p for p in (text, noise, noise + text)]
    [True, True, True]
    >>> len(payload_blocks(text)) < len(text) // 100
    True
    >>> len(payload_blocks(noise)) - len(noise) == 3 * 17 * 5  # 17 stored blocks a MiB
    True
    """
    view = memoryview(payload)
    return b"".join(
        map(_chunk_blocks, (view[at : at + CHUNK_BYTES] for at in range(0, len(view), CHUNK_BYTES)))
    )


def _chunk_blocks(chunk: memoryview) -> bytes:
    """One chunk of :func:`payload_blocks`: compressed, or stored if its start does not
    compress."""
    probe, rest = chunk[:PROBE_BYTES], chunk[PROBE_BYTES:]
    blocks = _blocks(probe, last=False)
    if len(blocks) > len(probe) * STORE_ABOVE:
        return _stored(chunk)
    return blocks + _blocks(rest, last=False) if rest else blocks


def _stored(chunk: memoryview) -> bytes:
    """``chunk`` in deflate's stored blocks (RFC 1951, 3.2.4), none of them the last: each a
    byte of zero bits (the stream is byte-aligned here), then its length and the length's
    complement, then the bytes."""
    parts: list[bytes | memoryview] = []
    for at in range(0, len(chunk), _STORED_MAX):
        part = chunk[at : at + _STORED_MAX]
        size = len(part)
        parts += (b"\0" + size.to_bytes(2, "little") + (size ^ 0xFFFF).to_bytes(2, "little"), part)
    return b"".join(parts)


def sha1_base32(digest: bytes) -> str:
    """A SHA-1 digest in base 32, as ``base64.b32encode`` spells it (160 bits: no padding),
    in a fifth of its time: the digest's 5-bit groups are spread, a few big-number steps,
    one to a byte, which one ``translate`` makes letters.

    >>> import base64; d = hashlib.sha1(b"x").digest()
    >>> sha1_base32(d) == base64.b32encode(d).decode()
    True
    """
    number = int.from_bytes(digest, "big")
    number = ((number >> 80) << 128) | (number & _HALF)
    for low, high, shift in _SPREAD:
        number = ((number & high) << shift) | (number & low)
    return number.to_bytes(32, "big").translate(_LETTERS).decode("ascii")


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
    block_digest: str | None = None,
    compressed: Deflated | None = None,
) -> bytes:
    """One record as a gzip member; ``stamp`` is its (WARC-Record-ID, WARC-Date).

    ``fields`` follow WARC-Target-URI (left out when ``target_uri`` is empty); the block is
    ``http`` then ``payload``. WARC-Payload-Digest is ``payload_digest`` when the caller knows
    it already, else computed from ``payload``; WARC-Block-Digest likewise ``block_digest``.
    ``compressed`` is ``payload`` already compressed (:func:`large_deflated`), else that is
    done here. A revisit has an
    HTTP block and no payload, and gets no WARC-Payload-Digest here: its ``fields`` carry the
    original's. A ``metadata`` record has none either: WARC 1.1 section 5.9 gives the field
    to records whose block has a well-defined payload, which a metadata block has not.
    """
    if warc_type == "revisit":
        if payload or not http:
            raise ValueError("a revisit record has an HTTP block and no payload")
        payload_field = None
    elif warc_type in NO_PAYLOAD_TYPES:
        payload_field = None
    else:
        payload_field = payload_digest or warc_digest(payload)
    length = len(http) + len(payload)
    target = f"WARC-Target-URI: {target_uri}\r\n" if target_uri else ""
    given = "".join([f"{name}: {value}\r\n" for name, value in fields]) if fields else ""
    if payload_field is not None:
        given += f"WARC-Payload-Digest: {payload_field}\r\n"
    block = block_digest or (
        warc_block_digest(http, payload) if http else payload_field or warc_digest(payload)
    )
    head = (
        f"WARC/1.1\r\nWARC-Type: {warc_type}\r\nWARC-Record-ID: {stamp[0]}\r\n"
        f"WARC-Date: {stamp[1]}\r\n{target}{given}WARC-Block-Digest: {block}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
    )
    compressed = compressed or large_deflated(payload)
    if compressed is not None:
        return _gzip_around(head.encode("utf-8") + http, compressed, b"\r\n\r\n")
    return gzip_parts((head.encode("utf-8"), http, payload, b"\r\n\r\n"))


def warc_block_digest(http: bytes, payload: bytes) -> str:
    """The WARC-Block-Digest of a block of ``http`` then ``payload``."""
    digest = hashlib.sha1(http)
    digest.update(payload)
    return "sha1:" + sha1_base32(digest.digest())


def gzip_parts(parts: tuple[bytes, ...]) -> bytes:
    """The parts as one gzip member, joined and compressed in one call (a small record's
    compressor object costs more than the copy; a payload above :data:`ONE_SHOT_BYTES` is
    not joined: :func:`record_member` compresses it apart, :func:`large_deflated`).

    >>> import gzip; gzip.decompress(gzip_parts((b"WARC/", b"1.1"))) == b"WARC/1.1"
    True
    """
    return isal_zlib.compress(b"".join(parts), ISAL_LEVEL, GZIP_WBITS)


def _gzip_around(front: bytes, middle: Deflated, back: bytes) -> bytes:
    """One gzip member of ``front``, the payload ``middle`` holds, then ``back``: each part's
    deflate blocks in turn (a block may refer back only within its own part), the last part's
    final, and the CRC-32 and length of the three."""
    crc = isal_zlib.crc32_combine(isal_zlib.crc32(front), middle.crc, middle.length)
    crc = isal_zlib.crc32(back, crc)
    size = (len(front) + middle.length + len(back)) & 0xFFFFFFFF
    body = (_blocks(front, last=False), middle.blocks, _blocks(back, last=True))
    return b"".join((GZIP_HEADER, *body, crc.to_bytes(4, "little"), size.to_bytes(4, "little")))


def _blocks(data: bytes | memoryview, *, last: bool) -> bytes:
    """``data`` as raw deflate blocks: ending the stream, or byte-aligned for more to follow."""
    compressor = isal_zlib.compressobj(ISAL_LEVEL, isal_zlib.DEFLATED, RAW_WBITS)
    return compressor.compress(data) + compressor.flush(
        isal_zlib.Z_FINISH if last else isal_zlib.Z_SYNC_FLUSH
    )
