"""The content codings of a response made of parts (RFC 9110 §8.4.1): identity, gzip, deflate.

A part sent in many responses, such as the items of a list's first page
(:mod:`server_module.lists.firstpages`), is a :class:`Kept`: bytes whose raw deflate (RFC 1951) is
made once, on first use, and then spliced between the deflate of the parts around it. Each
part is deflated by a compressor of its own and ends on a sync flush (byte-aligned, not the
final block, no reference back into another part), so the pieces join into one valid stream,
as pigz joins the blocks its threads compress; the gzip (RFC 1952) and zlib (RFC 1950)
wrappers add the checksum of the whole.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

__all__ = ["CODINGS", "Kept", "coded", "negotiate"]

CODINGS = ("identity", "gzip", "deflate")
LEVEL = 6
_IMPLICIT = 1e-9  # identity's quality when the field does not list it: last choice
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # no name, no mtime, unknown OS
_ZLIB_HEADER = b"\x78\x9c"  # deflate, 32 KiB window, default level
_FINAL_BLOCK = b"\x03\x00"  # an empty block marked final (fixed codes, end-of-block only)


def negotiate(accept_encoding: str | None) -> str:
    """The coding of :data:`CODINGS` an ``Accept-Encoding`` field asks for (RFC 9110 §12.5.3):
    the highest quality value wins, ``q=0`` refuses a coding, ties go to gzip, then deflate;
    a coding not listed counts as refused unless ``*`` covers it. Identity is sent when no
    coding is acceptable, or when it is listed with a higher quality than any (unlisted, it
    is acceptable but the last choice; when everything is refused it is still sent, as the
    RFC advises).

    >>> negotiate("gzip, deflate"), negotiate("deflate;q=1, gzip;q=0.5"), negotiate(None)
    ('gzip', 'deflate', 'identity')
    >>> negotiate("gzip;q=0, deflate;q=0"), negotiate("*"), negotiate("identity, gzip;q=0.5")
    ('identity', 'gzip', 'identity')
    """
    if not accept_encoding:
        return "identity"
    listed = _qualities(accept_encoding)
    star = listed.get("*")
    ranked = [(listed.get(c, star or 0.0), -rank, c) for rank, c in enumerate(CODINGS[1:])]
    quality, _, coding = max(ranked)
    unlisted_identity = _IMPLICIT if star is None else star
    if quality > 0 and quality >= listed.get("identity", unlisted_identity):
        return coding
    return "identity"


def _qualities(field: str) -> dict[str, float]:
    """Each coding's quality value; a malformed ``q`` counts as 0 (not acceptable)."""
    listed: dict[str, float] = {}
    for item in field.split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = min(1.0, max(0.0, float(value.strip())))
                except ValueError:
                    quality = 0.0
        listed[name] = max(quality, listed.get(name, 0.0))
    return listed


class Kept(bytes):
    """Bytes sent in many responses; their raw deflate is made once, on first use."""

    _deflated: bytes | None = None

    def deflated(self) -> bytes:
        """The raw deflate of these bytes, ending on a sync flush (see the module docstring).

        Two threads asking at once may both make it; either result is the same stream.
        """
        if self._deflated is None:
            self._deflated = _deflate(self)
        return self._deflated


def coded(parts: Sequence[bytes], coding: str) -> bytes:
    """The parts joined, in one of :data:`CODINGS` (ValueError for any other)."""
    if coding == "identity":
        return b"".join(parts)
    if coding == "gzip":
        crc = 0
        for part in parts:
            crc = zlib.crc32(part, crc)
        size = sum(map(len, parts)) & 0xFFFFFFFF
        return b"".join([_GZIP_HEADER, *_deflated(parts), struct.pack("<II", crc, size)])
    if coding == "deflate":
        adler = 1
        for part in parts:
            adler = zlib.adler32(part, adler)
        return b"".join([_ZLIB_HEADER, *_deflated(parts), struct.pack(">I", adler)])
    raise ValueError(f"unknown content coding {coding!r}")


def _deflated(parts: Sequence[bytes]) -> list[bytes]:
    """One raw deflate stream of the parts: each kept part's own, the others made here."""
    blocks = [
        part.deflated() if isinstance(part, Kept) else _deflate(part) for part in parts if part
    ]
    blocks.append(_FINAL_BLOCK)
    return blocks


def _deflate(data: bytes) -> bytes:
    """Raw deflate ending on a sync flush, with a window and memory fit to the data's size:
    a compressor sets up (and the kernel faults in) about 256 KiB at the largest settings,
    more than the envelope of a response needs."""
    bits = min(15, max(9, len(data).bit_length()))
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -bits, min(8, bits - 7))
    return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
