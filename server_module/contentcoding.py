"""The content codings of a response made of parts (RFC 9110 §8.4.1): identity, gzip, deflate.

A part sent in many responses, such as the items of a list's first page
(:mod:`server_module.firstpages`), is a :class:`Kept`: bytes whose raw deflate (RFC 1951) is
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

__all__ = ["CODINGS", "Kept", "coded"]

CODINGS = ("identity", "gzip", "deflate")
LEVEL = 6
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # no name, no mtime, unknown OS
_ZLIB_HEADER = b"\x78\x9c"  # deflate, 32 KiB window, default level
_FINAL_BLOCK = b"\x03\x00"  # an empty block marked final (fixed codes, end-of-block only)


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
