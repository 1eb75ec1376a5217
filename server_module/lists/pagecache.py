"""List pages made ahead of their request: the read-ahead of a paged harvest.

A harvester asks for page N+1 with the token page N carried, and only after it has parsed
page N. The provider therefore knows the next request before it arrives and is idle while the
harvester parses: after sending a page, it builds the next one (:meth:`Repository.read_ahead`)
and keeps it here, keyed by the token, so the request is answered without touching the index.

Entries are tagged with the index's generation (:meth:`Snapshot.generation`): a page made before
a refresh that changed the index is never served after it. They are also few, small in total
and short-lived: a harvester that never comes back costs one page of work and memory, for a
minute at most.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from server_module.oai.render import Body

MAX_PAGES = 16
MAX_BYTES = 16 * 1024 * 1024  # characters, in fact; a page larger than this is not kept
TTL_S = 60.0


@dataclass(frozen=True)
class Page:
    """A verb's response body and, for a list page with more to come, the token it gave out."""

    body: Body
    next_token: str | None = None

    @property
    def size(self) -> int:
        return len(self.body) if isinstance(self.body, str) else sum(map(len, self.body))


@dataclass(frozen=True)
class _Entry:
    page: Page
    generation: int
    size: int
    made: float


class PageCache:
    """A bounded LRU of pages by (verb, token); thread-safe for gthread workers."""

    def __init__(
        self,
        max_pages: int = MAX_PAGES,
        max_bytes: int = MAX_BYTES,
        ttl_s: float = TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_pages, self.max_bytes, self.ttl_s, self.clock = max_pages, max_bytes, ttl_s, clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, verb: str, token: str, generation: int) -> Page | None:
        """The page kept for this request, if it was made from this generation of the index."""
        with self._lock:
            entry = self._entries.pop((verb, token), None)
            if entry is not None:
                self._bytes -= entry.size
                if entry.generation == generation and self.clock() - entry.made < self.ttl_s:
                    self.hits += 1
                    return entry.page
            self.misses += 1
            return None

    def put(self, verb: str, token: str, generation: int, page: Page) -> None:
        size = page.size
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop((verb, token), None)
            if old is not None:
                self._bytes -= old.size
            self._entries[(verb, token)] = _Entry(page, generation, size, self.clock())
            self._bytes += size
            while len(self._entries) > self.max_pages or self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size
