"""The seen-URL test: has the crawl met this canonical URL before?

After Broder, Najork & Wiener, "Efficient URL caching for World Wide Web crawling" (WWW 2003),
and Mercator's disk-based seen set. A URL is kept as a 64-bit fingerprint (:func:`fingerprint`):
the top 20 bits hash the URL's host, the low 44 bits hash the whole URL, so one host's
fingerprints sort together and its lookups land on nearby pages of the store.

A lookup checks three places, fastest first:

1. the **cache**: a CLOCK (second-chance) cache of recently met fingerprints (:class:`ClockCache`);
   every lookup goes through it, so its hit rate is the one the paper measures;
2. the **buffer**: an in-memory set of fingerprints added since the last flush;
3. the **store**: a file of sorted, unique, 8-byte big-endian fingerprints after a 16-byte
   header (:class:`FingerprintFile`), searched through ``mmap`` with a sparse in-memory index of
   every ``index_stride``-th key (64 by default: 1/64 of the store, 1.2 MiB per 10 million URLs).
   A denser index than one key per 4 KiB page buys speed: in pure Python each random memory
   touch costs hundreds of nanoseconds, and one ``mmap.find`` over 512 bytes beats a
   bisection through a larger block (see ``bench/README.md``).

When the buffer holds ``buffer_size`` fingerprints it is sorted and merged with the store into a
new file, which is written beside it, fsynced and renamed over it (``os.replace``).

Durability contract: a process killed at any moment (SIGKILL included) leaves the store as it
was after the last complete flush, never torn. Fingerprints added since then are lost; the
caller tolerates this because its frontier is persisted separately and is re-added on start.
Call :meth:`SeenSet.flush` at checkpoints; :meth:`SeenSet.close` flushes too.

Two different URLs of one host share a fingerprint with probability about n**2 / 2**45 for a
host of n URLs (about 3 % for a host of a million URLs); such a URL is wrongly taken as seen.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import sys
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from hashlib import blake2b
from itertools import pairwise
from pathlib import Path
from types import TracebackType
from zlib import crc32

from harvester.exceptions import StateError

log = logging.getLogger(__name__)

HOST_BITS = 20
URL_BITS = 64 - HOST_BITS
_HOST_MASK = ((1 << HOST_BITS) - 1) << (32 - HOST_BITS)  # the top bits of a CRC-32
_DROP = 512 - URL_BITS  # keep the first URL_BITS bits of the 512-bit BLAKE2b digest

HEADER = struct.Struct(">8sQ")  # magic, number of fingerprints
HEADER_SIZE = HEADER.size  # 16: keys stay 8-byte aligned
MAGIC = b"SEENFP\x00\x01"
KEY_SIZE = 8
FIND_SPAN = 64  # keys: a span this small is scanned with one mmap.find, not bisected
MERGE_CHUNK = 65_536  # keys of the old store decoded at a time while merging
_SWAP = sys.byteorder == "little"  # array("Q") is native-endian; the file is big-endian


def fingerprint(url: str) -> int:
    """The 64-bit fingerprint of a canonical URL: host hash (20 bits), then URL hash (44 bits).

    The host (with port, as written) is hashed with CRC-32, the whole URL with BLAKE2b (the
    first 44 bits of its 512-bit digest: the cheapest call); both are fixed functions, so
    fingerprints are the same in every process and version, unlike ``hash()``.

    >>> a = fingerprint("https://example.org/a")
    >>> a >> URL_BITS == fingerprint("https://example.org/b?page=2") >> URL_BITS
    True
    >>> 0 <= a < 2**64
    True
    """
    data = url.encode()
    try:
        host = data.split(b"/", 3)[2]
    except IndexError:  # not an absolute URL: no host to group by
        host = b""
    return (crc32(host) & _HOST_MASK) << 32 | int.from_bytes(blake2b(data).digest()) >> _DROP


@dataclass(frozen=True)
class SeenStats:
    """Counters since the set was built. Every lookup ends in exactly one of the cache, the
    buffer or a disk probe; ``hit_rate`` is the cache's share, as in Broder et al."""

    lookups: int
    cache_hits: int
    buffer_hits: int
    disk_probes: int
    disk_hits: int  # probes that found the fingerprint (the rest were new URLs)
    size: int
    flushes: int
    hit_rate: float


class ClockCache:
    """A fixed-size set of fingerprints with CLOCK (second-chance) replacement.

    A dict maps each key to its slot; parallel ``keys`` and ``referenced`` arrays hold the
    ring. A hit sets the slot's reference bit. To make room, the hand sweeps the ring,
    clearing set bits, and evicts the first slot whose bit is clear; a new entry starts with
    its bit clear, just behind the hand, so it survives one full sweep unreferenced.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"cache capacity must be >= 0, not {capacity}")
        self.capacity = capacity
        self.hits = 0
        self._slots: dict[int, int] = {}
        self._keys: list[int] = []
        self._referenced = bytearray(capacity)
        self._hand = 0

    def hit(self, key: int) -> bool:
        """Whether ``key`` is cached; if so, mark it referenced and count a hit."""
        slot = self._slots.get(key)
        if slot is None:
            return False
        self._referenced[slot] = 1
        self.hits += 1
        return True

    def insert(self, key: int) -> None:
        """Cache ``key``, which the caller knows is not cached, evicting one entry if full."""
        keys = self._keys
        if len(keys) < self.capacity:
            self._slots[key] = len(keys)
            keys.append(key)
        elif self.capacity:
            slot = self._victim()
            del self._slots[keys[slot]]
            keys[slot] = key
            self._slots[key] = slot

    def _victim(self) -> int:
        """Advance the hand past referenced slots (clearing them); return the first other."""
        referenced, hand, capacity = self._referenced, self._hand, self.capacity
        while referenced[hand]:
            referenced[hand] = 0
            hand = hand + 1 if hand + 1 < capacity else 0
        self._hand = hand + 1 if hand + 1 < capacity else 0
        return hand

    def clear(self) -> None:
        self._slots.clear()
        self._keys.clear()
        self._referenced = bytearray(self.capacity)
        self._hand = 0

    def __contains__(self, key: object) -> bool:
        """Membership without touching the reference bit (for inspection, not lookups)."""
        return key in self._slots

    def __len__(self) -> int:
        return len(self._keys)


class FingerprintFile:
    """The on-disk store: a header, then sorted unique 8-byte big-endian fingerprints.

    A lookup finds its block of the mapped file in the in-memory sparse index (every
    ``stride``-th key), bisecting only the few entries that share its top bits; narrows a wide
    block by bisection to at most ``FIND_SPAN`` keys; then lets ``mmap.find`` scan that span in
    C. Every step is a C call: in pure Python, each random memory touch and each interpreted
    operation costs about as much as the search itself.
    """

    def __init__(self, path: Path, stride: int = FIND_SPAN) -> None:
        if stride < 1:
            raise ValueError(f"index stride must be >= 1, not {stride}")
        self.path = path
        self.stride = stride
        self.count = 0
        self._block_bytes = KEY_SIZE * stride
        self._map: mmap.mmap | None = None
        self._find: Callable[[bytes, int, int], int] = _nothing
        self._index: array[int] | None = None
        self._buckets = array("I", [0, 0])  # see _bucket_table
        self._shift = 64

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
        if self._map is not None:
            self._map.close()
        self._map, self._find, self._index, self.count = None, _nothing, None, 0
        self._buckets, self._shift = array("I", [0, 0]), 64

    def _load(self) -> None:
        self.close()
        if not self.path.exists():
            self._index = array("Q")
            return
        with open(self.path, "rb") as file:
            header = file.read(HEADER.size)
            size = os.fstat(file.fileno()).st_size
            if len(header) < HEADER.size:
                raise ValueError("truncated header")
            magic, count = HEADER.unpack(header)
            if magic != MAGIC:
                raise ValueError(f"not a seen-URL store (magic {magic!r})")
            if size != HEADER_SIZE + KEY_SIZE * count:
                raise ValueError(f"{size} bytes do not hold the {count} fingerprints announced")
            if count:
                self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
                self._find = self._map.find
        self.count = count
        self._index = self._sparse_index()
        self._buckets, self._shift = _bucket_table(self._index)

    def _sparse_index(self) -> array[int]:
        """The first key of every block; the very first is 0, so every lookup has a block."""
        index = array("Q", (self.key_at(i) for i in range(0, self.count, self.stride)))
        if any(a >= b for a, b in pairwise(index)):
            raise ValueError("fingerprints out of order")
        if index:
            index[0] = 0
        return index

    def key_at(self, i: int) -> int:
        assert self._map is not None
        offset = HEADER_SIZE + KEY_SIZE * i
        return int.from_bytes(self._map[offset : offset + KEY_SIZE], "big")

    def contains(self, fp: int) -> bool:
        """Whether ``fp`` is stored: a bisection of the index, then ``mmap.find`` in C."""
        index = self._index
        if not index:
            if index is None:
                raise StateError(f"the seen-URL store {self.path} is not open")
            return False
        top = fp >> self._shift
        buckets = self._buckets
        block = bisect_right(index, fp, buckets[top], buckets[top + 1]) - 1  # >= 0: index[0] is 0
        key = fp.to_bytes(KEY_SIZE)
        start = HEADER_SIZE + block * self._block_bytes
        end = start + self._block_bytes  # past the end for the last block: find stops there
        if self.stride > FIND_SPAN:
            start, end = self._narrow(key, start, end)
        find = self._find
        pos = find(key, start, end)
        while pos & 7 and pos != -1:  # a match straddling two keys: look further
            pos = find(key, pos + 1, end)
        return pos != -1

    def _narrow(self, key: bytes, start: int, end: int) -> tuple[int, int]:
        """Bisect the byte range ``start:end`` down to at most ``FIND_SPAN`` keys."""
        assert self._map is not None
        end = min(end, HEADER_SIZE + KEY_SIZE * self.count)
        while end - start > KEY_SIZE * FIND_SPAN:
            mid = start + ((end - start) >> 4 << 3)  # the middle key's offset
            if self._map[mid : mid + KEY_SIZE] <= key:  # big-endian: bytes order is int order
                start = mid
            else:
                end = mid
        return start, end

    def merge(self, new: list[int]) -> None:
        """Replace the store, crash-safely, by its union with ``new`` (sorted, none stored)."""
        tmp = self.tmp_path
        try:
            with open(tmp, "wb") as out:
                out.write(HEADER.pack(MAGIC, self.count + len(new)))
                for chunk in self._merged(new):
                    out.write(chunk)
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
        assert self._map is not None
        taken = 0
        for first in range(0, self.count, MERGE_CHUNK):
            last = min(first + MERGE_CHUNK, self.count)
            until = bisect_left(new, self.key_at(last), taken) if last < self.count else len(new)
            start, end = HEADER_SIZE + KEY_SIZE * first, HEADER_SIZE + KEY_SIZE * last
            if until == taken:
                yield self._map[start:end]
                continue
            old = _decode(self._map[start:end])
            yield _encode(sorted(old.tolist() + new[taken:until]))  # two runs: one merge
            taken = until


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


class SeenSet:
    """The crawl's seen-URL set: a CLOCK cache, a buffer and a sorted fingerprint file.

    See the module docstring for the layout and the durability contract.
    """

    def __init__(
        self,
        path: Path,
        *,
        cache_size: int = 50_000,
        buffer_size: int = 1_000_000,
        index_stride: int = FIND_SPAN,
    ) -> None:
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1, not {buffer_size}")
        self.path = path
        self.buffer_size = buffer_size
        self._cache = ClockCache(cache_size)
        self._store = FingerprintFile(path, index_stride)
        self._buffer: set[int] = set()
        self._buffer_hits = self._disk_probes = self._disk_hits = self._flushes = 0

    # -- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        self._store.open()
        log.debug("seen-URL store %s: %d fingerprints", self.path, self._store.count)

    def close(self) -> None:
        """Flush the buffer, then release the store; a closed set refuses lookups."""
        if self._store.is_open:
            self.flush()
        self._store.close()
        self._cache.clear()

    def __enter__(self) -> SeenSet:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- lookups ---------------------------------------------------------------------

    def add_if_new(self, url: str) -> bool:
        """Record ``url``; True if it was not seen before. The crawler's hot path."""
        fp = fingerprint(url)
        if self._cache.hit(fp) or self._found(fp):
            return False
        self._record(fp)
        return True

    def __contains__(self, url: object) -> bool:
        if not isinstance(url, str):
            return False
        fp = fingerprint(url)
        return self._cache.hit(fp) or self._found(fp)

    def add_many_if_new(self, urls: Iterable[str]) -> list[str]:
        """Record each URL; return the new ones, in order (a repeat within ``urls`` is not new)."""
        hit, found, record = self._cache.hit, self._found, self._record
        new: list[str] = []
        for url in urls:
            fp = fingerprint(url)
            if not (hit(fp) or found(fp)):
                record(fp)
                new.append(url)
        return new

    def _found(self, fp: int) -> bool:
        """After a cache miss: whether the buffer or the store holds ``fp``; if so, cache it."""
        if fp in self._buffer:
            self._buffer_hits += 1
        else:
            self._disk_probes += 1
            if not self._store.contains(fp):
                return False
            self._disk_hits += 1
        self._cache.insert(fp)
        return True

    def _record(self, fp: int) -> None:
        self._buffer.add(fp)
        self._cache.insert(fp)
        if len(self._buffer) >= self.buffer_size:
            self.flush()

    # -- persistence -----------------------------------------------------------------

    def flush(self) -> None:
        """Merge the buffer into the store (crash-safe); afterwards it survives a crash."""
        if not self._buffer:
            return
        start = time.perf_counter()
        self._store.merge(sorted(self._buffer))
        log.debug(
            "seen-URL store %s: merged %d fingerprints, %d in all, in %.2f s",
            self.path,
            len(self._buffer),
            self._store.count,
            time.perf_counter() - start,
        )
        self._buffer.clear()
        self._flushes += 1

    # -- inspection ------------------------------------------------------------------

    def __len__(self) -> int:
        return self._store.count + len(self._buffer)

    @property
    def stats(self) -> SeenStats:
        hits = self._cache.hits
        lookups = hits + self._buffer_hits + self._disk_probes
        return SeenStats(
            lookups=lookups,
            cache_hits=hits,
            buffer_hits=self._buffer_hits,
            disk_probes=self._disk_probes,
            disk_hits=self._disk_hits,
            size=len(self),
            flushes=self._flushes,
            hit_rate=hits / lookups if lookups else 0.0,
        )
