"""The seen-URL test: has the crawl met this canonical URL before?

After Broder, Najork & Wiener, "Efficient URL caching for World Wide Web crawling" (WWW 2003),
and Mercator's disk-based seen set. A URL is kept as a 64-bit fingerprint (:func:`fingerprint`):
the top 20 bits hash the URL's host, the low 44 bits hash the whole URL, so one host's
fingerprints sort together and its lookups land on nearby pages of the store.

A lookup checks three places, fastest first:

1. the **cache**: a CLOCK (second-chance) cache of recently met fingerprints
   (``clockcache.ClockCache``); every lookup goes through it, so its hit rate is the one the
   paper measures;
2. the **buffer**: an in-memory set of fingerprints added since the last flush;
3. the **store**: a file of sorted, unique fingerprints and a bit filter over them
   (``fingerprintfile.FingerprintFile``). The filter answers most new URLs without a search;
   the others are searched through ``mmap`` with a sparse in-memory index of every
   ``index_stride``-th key.

When the buffer holds ``buffer_size`` fingerprints it is sorted and merged with the store into a
new file, which is written beside it, fsynced and renamed over it (``os.replace``).

Durability contract: a process killed at any moment (SIGKILL included) leaves the store as it
was after the last complete flush, never torn. Fingerprints added since then are lost; the
caller tolerates this because its frontier is persisted separately and is re-added on start.
Call :meth:`SeenSet.flush` at checkpoints; :meth:`SeenSet.close` flushes too.

The converse must hold too: the store may never hold a URL whose frontier row was not
committed, or that URL is never queued again. URLs added inside :meth:`SeenSet.deferred` (the
span of the caller's state transaction) are therefore never flushed before the block ends,
and are forgotten when it raises.

Two different URLs of one host share a fingerprint with probability about n**2 / 2**45 for a
host of n URLs (about 3 % for a host of a million URLs); such a URL is wrongly taken as seen.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path
from zlib import crc32

from coop_common.component import Component
from harvester.crawl.seen.clockcache import ClockCache
from harvester.crawl.seen.fingerprintfile import FIND_SPAN, FingerprintFile

__all__ = ["HOST_BITS", "URL_BITS", "SeenSet", "SeenStats", "fingerprint"]

log = logging.getLogger(__name__)

HOST_BITS = 20
URL_BITS = 64 - HOST_BITS
_HOST_MASK = ((1 << HOST_BITS) - 1) << (32 - HOST_BITS)  # the top bits of a CRC-32
_DROP = 64 - URL_BITS  # keep the first URL_BITS bits of the digest's first 8 bytes
_FIRST_WORD = struct.Struct(">Q").unpack_from  # cheaper than int.from_bytes of all 64 bytes
_FRESH = blake2b()  # copied for each URL: cheaper than the constructor, which parses 12 options


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
    digest = _FRESH.copy()
    digest.update(data)
    return (crc32(host) & _HOST_MASK) << 32 | _FIRST_WORD(digest.digest())[0] >> _DROP


@dataclass(frozen=True)
class SeenStats:
    """Counters since the set was built. Every lookup ends in exactly one of the cache, the
    buffer or a disk probe; ``hit_rate`` is the cache's share, as in Broder et al."""

    lookups: int
    cache_hits: int
    buffer_hits: int
    disk_probes: int
    disk_hits: int  # probes that found the fingerprint (the rest were new URLs)
    filtered: int  # probes the store's filter answered (new URLs) without searching the keys
    size: int
    flushes: int
    hit_rate: float


class SeenSet(Component):
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
        self._deferred: list[int] | None = None  # added inside deferred(), not yet committed
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
        if self._deferred is not None:
            self._deferred.append(fp)
        elif len(self._buffer) >= self.buffer_size:
            self.flush()

    # -- the caller's transactions ---------------------------------------------------

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """A block whose additions the caller's state commits at the block's end.

        Inside, nothing is flushed: no URL reaches the store before its frontier row is
        committed. A normal end flushes a full buffer. When the block raises, the URLs it
        added are forgotten, since the state never queued them. Blocks do not nest.
        """
        if self._deferred is not None:
            raise RuntimeError("SeenSet.deferred() blocks do not nest")
        added: list[int] = []
        self._deferred = added
        try:
            yield
        except BaseException:
            self._buffer.difference_update(added)  # none was flushed: all are in the buffer
            self._cache.clear()  # it may hold them too; it is only a cache
            raise
        finally:
            self._deferred = None
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
            filtered=self._store.filtered,
            size=len(self),
            flushes=self._flushes,
            hit_rate=hits / lookups if lookups else 0.0,
        )
