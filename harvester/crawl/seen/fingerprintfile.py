"""The seen-URL store on disk: a sorted file of unique 64-bit fingerprints and their filter.

The file is a 24-byte header (magic, count, filter size), then the fingerprints, 8-byte
big-endian, sorted and unique, then the **filter**: a bitmap of :func:`filter_size` bytes (a
power of four: 8 to 32 bits per key) in which bit ``fp & 7`` of byte ``(fp >> 3) & (size - 1)``
is set for every stored key ``fp``, a Bloom filter with one hash, the key's low bits (uniform
in a fingerprint). A lookup whose bit is clear is a new key, answered without searching the
keys; a new key passes the filter only when its bit was set by another (3 to 12 % of them).

Past the filter, the keys are searched through ``mmap`` with a sparse in-memory index of every
``stride``-th key (64 by default: 1/64 of the store, 1.2 MiB per 10 million URLs). A denser
index than one key per 4 KiB page buys speed: in pure Python each random memory touch costs
hundreds of nanoseconds, and one ``mmap.find`` over 512 bytes beats a bisection through a
larger block (see ``bench/README.md``, "seen"). The filter is mapped from the file like the
keys, so the heap holds only the index.

A file of format 1 (a 16-byte header, magic ``SEENFP\\x00\\x01``, no filter) is still read, its
keys searched without a filter; its first merge writes format 2.

New keys come in sorted batches and are merged with the store into a new file, which is
written beside it, fsynced and renamed over it (``os.replace``): a process killed at any
moment (SIGKILL included) leaves the store as it was after the last complete merge, never torn.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import BinaryIO

from harvester.exceptions import StateError

__all__ = [
    "FIND_SPAN",
    "HEADER",
    "HEADER_SIZE",
    "KEY_SIZE",
    "LEGACY_HEADER",
    "LEGACY_MAGIC",
    "MAGIC",
    "FingerprintFile",
    "filter_size",
]

HEADER = struct.Struct(">8sQQ")  # magic, number of fingerprints, bytes of the filter
HEADER_SIZE = HEADER.size  # 24: keys stay 8-byte aligned
MAGIC = b"SEENFP\x00\x02"
LEGACY_HEADER = struct.Struct(">8sQ")  # format 1: magic, number of fingerprints; no filter
LEGACY_MAGIC = b"SEENFP\x00\x01"
KEY_SIZE = 8
FIND_SPAN = 64  # keys: a span this small is scanned with one mmap.find, not bisected
MERGE_CHUNK = 65_536  # keys of the old store decoded at a time while merging
_PASS_ALL = b"\xff"  # the filter of a store without one: with mask 0, every key passes
_SWAP = sys.byteorder == "little"  # array("Q") is native-endian; the file is big-endian


class FingerprintFile:
    """The on-disk store: a header, sorted unique 8-byte big-endian fingerprints, a filter.

    A lookup first tests the key's bit in the filter: clear, the key is new. Otherwise it
    finds its block of the mapped file in the in-memory sparse index (every ``stride``-th
    key), bisecting only the few entries that share its top bits; narrows a wide block by
    bisection to at most ``FIND_SPAN`` keys; then lets ``mmap.find`` scan that span in C. Every
    step is a C call: in pure Python, each random memory touch and each interpreted operation
    costs about as much as the search itself.
    """

    def __init__(self, path: Path, stride: int = FIND_SPAN) -> None:
        if stride < 1:
            raise ValueError(f"index stride must be >= 1, not {stride}")
        self.path = path
        self.stride = stride
        self.count = 0
        self.filtered = 0  # lookups the filter answered (new keys), over every reopening
        self._block_bytes = KEY_SIZE * stride
        self._base = self._end = HEADER_SIZE  # where the keys start (the header's size), end
        self._map: mmap.mmap | None = None
        self._find: Callable[[bytes, int, int], int] = _nothing
        self._index: array[int] | None = None
        self._buckets = array("I", [0, 0])  # see _bucket_table
        self._shift = 64
        self._filter: bytes | memoryview = _PASS_ALL
        self._filter_mask = 0

    @property
    def is_open(self) -> bool:
        return self._index is not None

    @property
    def tmp_path(self) -> Path:
        return self.path.with_name(self.path.name + ".tmp")

    def open(self) -> None:
        """Map the store; an absent file is an empty store, a leftover temp file is dropped."""
        self.tmp_path.unlink(missing_ok=True)  # a flush that was killed before its rename
        try:
            self._load()
        except (OSError, ValueError) as exc:
            self.close()
            raise StateError(f"cannot open the seen-URL store {self.path}: {exc}") from exc

    def close(self) -> None:
        if isinstance(self._filter, memoryview):
            self._filter.release()  # the map cannot close while a view of it is held
        if self._map is not None:
            self._map.close()
        self._map, self._find, self._index, self.count = None, _nothing, None, 0
        self._buckets, self._shift = array("I", [0, 0]), 64
        self._filter, self._filter_mask = _PASS_ALL, 0

    def _load(self) -> None:
        self.close()
        if not self.path.exists():
            self._index = array("Q")
            return
        with open(self.path, "rb") as file:
            base, count, filter_bytes = _read_header(file)
            size = os.fstat(file.fileno()).st_size
            if size != base + KEY_SIZE * count + filter_bytes:
                raise ValueError(
                    f"{size} bytes do not hold the {count} fingerprints and the "
                    f"{filter_bytes}-byte filter announced"
                )
            if count:
                self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
                self._find = self._map.find
        self._base, self._end, self.count = base, base + KEY_SIZE * count, count
        self._index = self._sparse_index()
        self._buckets, self._shift = _bucket_table(self._index)
        if self._map is not None and filter_bytes:
            self._filter = memoryview(self._map)[self._end :]
            self._filter_mask = filter_bytes - 1

    def _sparse_index(self) -> array[int]:
        """The first key of every block; the very first is 0, so every lookup has a block."""
        index = array("Q", (self.key_at(i) for i in range(0, self.count, self.stride)))
        if any(a >= b for a, b in pairwise(index)):
            raise ValueError("fingerprints out of order")
        if index:
            index[0] = 0
        return index

    def key_at(self, i: int) -> int:
        if self._map is None:
            raise ValueError(f"{self.path}: read while closed or empty")
        offset = self._base + KEY_SIZE * i
        return int.from_bytes(self._map[offset : offset + KEY_SIZE], "big")

    def contains(self, fp: int) -> bool:
        """Whether ``fp`` is stored: its bit in the filter, then a bisection of the index, then
        ``mmap.find`` in C."""
        index = self._index
        if not index:
            if index is None:
                raise StateError(f"the seen-URL store {self.path} is not open")
            return False
        if not self._filter[fp >> 3 & self._filter_mask] >> (fp & 7) & 1:
            self.filtered += 1
            return False
        top = fp >> self._shift
        buckets = self._buckets
        block = bisect_right(index, fp, buckets[top], buckets[top + 1]) - 1  # >= 0: index[0] is 0
        key = fp.to_bytes(KEY_SIZE)
        start = self._base + block * self._block_bytes
        end = start + self._block_bytes
        if end > self._end:  # the last block: the filter follows the keys
            end = self._end
        if self.stride > FIND_SPAN:
            start, end = self._narrow(key, start, end)
        find = self._find
        pos = find(key, start, end)
        while pos & 7 and pos != -1:  # a match straddling two keys: look further
            pos = find(key, pos + 1, end)
        return pos != -1

    def _narrow(self, key: bytes, start: int, end: int) -> tuple[int, int]:
        """Bisect the byte range ``start:end`` down to at most ``FIND_SPAN`` keys."""
        if self._map is None:
            raise ValueError(f"{self.path}: read while closed or empty")
        while end - start > KEY_SIZE * FIND_SPAN:
            mid = start + ((end - start) >> 4 << 3)  # the middle key's offset
            if self._map[mid : mid + KEY_SIZE] <= key:  # big-endian: bytes order is int order
                start = mid
            else:
                end = mid
        return start, end

    def merge(self, new: list[int]) -> None:
        """Replace the store, crash-safely, by its union with ``new`` (sorted, none stored)."""
        count = self.count + len(new)
        tmp = self.tmp_path
        try:
            bitmap = self._merged_filter(new, filter_size(count))
            with open(tmp, "wb") as out:
                out.write(HEADER.pack(MAGIC, count, len(bitmap)))
                for chunk in self._merged(new):
                    out.write(chunk)
                out.write(bitmap)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StateError(f"cannot write the seen-URL store {self.path}: {exc}") from exc
        self.open()

    def _merged(self, new: list[int]) -> Iterator[bytes]:
        """The encoded union, chunk by chunk; chunks no new key falls into are copied as is."""
        if not self.count:
            yield _encode(new)
            return
        if self._map is None:
            raise ValueError(f"{self.path}: read while closed or empty")
        taken = 0
        for first in range(0, self.count, MERGE_CHUNK):
            last = min(first + MERGE_CHUNK, self.count)
            until = bisect_left(new, self.key_at(last), taken) if last < self.count else len(new)
            if until == taken:
                yield self._map[self._base + KEY_SIZE * first : self._base + KEY_SIZE * last]
                continue
            old = self._keys(first, last)
            yield _encode(sorted(old.tolist() + new[taken:until]))  # two runs: one merge
            taken = until

    def _merged_filter(self, new: list[int], size: int) -> bytearray:
        """The union's filter: this store's plus ``new`` while its size holds; else one built
        afresh from every key (the store grew past a power of four, or had none)."""
        if size == self._filter_mask + 1 and isinstance(self._filter, memoryview):
            bitmap = bytearray(self._filter)
        else:
            bitmap = bytearray(size)
            for first in range(0, self.count, MERGE_CHUNK):
                _mark(bitmap, self._keys(first, min(first + MERGE_CHUNK, self.count)))
        _mark(bitmap, new)
        return bitmap

    def _keys(self, first: int, last: int) -> array[int]:
        """Keys ``first`` to ``last`` (excluded), decoded."""
        if self._map is None:
            raise ValueError(f"{self.path}: read while closed or empty")
        return _decode(self._map[self._base + KEY_SIZE * first : self._base + KEY_SIZE * last])


def filter_size(count: int) -> int:
    """The filter's bytes for ``count`` keys: the power of four from ``count`` to ``4 * count``
    (8 to 32 bits a key: 3 to 12 % of new keys pass), at least 16; none for an empty store.

    Powers of four, not two: a filter is rebuilt from every key when the store outgrows it,
    and this halves how often that happens (see :meth:`FingerprintFile._merged_filter`).
    """
    if not count:
        return 0
    bits = (count - 1).bit_length()  # 2**bits >= count
    return 1 << max(4, bits + (bits & 1))


def _mark(bitmap: bytearray, keys: Iterable[int]) -> None:
    """Set each key's bit in the filter (see the module docstring)."""
    mask = len(bitmap) - 1
    for key in keys:
        bitmap[key >> 3 & mask] |= 1 << (key & 7)


def _read_header(file: BinaryIO) -> tuple[int, int, int]:
    """The keys' offset, their count and the filter's size; format 1 has no filter."""
    head = file.read(HEADER.size)
    if head[:8] == LEGACY_MAGIC and len(head) >= LEGACY_HEADER.size:
        return LEGACY_HEADER.size, LEGACY_HEADER.unpack_from(head)[1], 0
    if len(head) < HEADER.size:
        raise ValueError("truncated header")
    magic, count, filter_bytes = HEADER.unpack(head)
    if magic != MAGIC:
        raise ValueError(f"not a seen-URL store (magic {magic!r})")
    if filter_bytes & (filter_bytes - 1):
        raise ValueError(f"a filter of {filter_bytes} bytes: not a power of two")
    return HEADER.size, count, filter_bytes


def _bucket_table(index: array[int]) -> tuple[array[int], int]:
    """Where to bisect the index: entries ``table[t]`` to ``table[t + 1]`` are the ones whose
    top bits are ``t``, so a lookup bisects a few entries that share a cache line or two
    instead of the whole index (about one entry per bucket; at most 2**16 buckets)."""
    bits = min(max(len(index).bit_length() - 1, 0), 16)
    shift = 64 - bits
    tops = [key >> shift for key in index]
    table = array("I", (bisect_left(tops, t) for t in range(1 << bits)))
    table.append(len(index))
    return table, shift


def _nothing(key: bytes, start: int, end: int) -> int:
    return -1


def _encode(keys: Iterable[int]) -> bytes:
    words = array("Q", keys)
    if _SWAP:
        words.byteswap()
    return words.tobytes()


def _decode(data: bytes) -> array[int]:
    words = array("Q")
    words.frombytes(data)
    if _SWAP:
        words.byteswap()
    return words


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX; a no-op where directories can't open)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
