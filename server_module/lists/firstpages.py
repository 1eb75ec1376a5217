"""First pages of lists, kept until the index changes.

Every harvest of a site starts with the same request (``ListIdentifiers`` with a
``metadataPrefix``), and its page lists the same items until a refresh changes the index:
only the envelope and the resumptionToken, which carry the time of the request, differ. So
the items of a first page, rendered and encoded, are kept here with the list's size and where
the page ended, tagged with the index's generation (:meth:`Snapshot.generation
<server_module.index.snapshot.Snapshot.generation>`): a page made from an older generation is never
served. The next harvester's first page then costs the token and the envelope, as a page
made ahead does (:mod:`server_module.lists.pagecache`), instead of reading and rendering its rows,
and its gzip or deflate is spliced from the items' own, made once
(:class:`~server_module.lists.contentcoding.Kept`).

The key is the list's arguments with ``until`` left out when it is at or after the newest
datestamp, since it then bounds nothing (:meth:`Repository._first_headers
<server_module.repository.Repository>`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from server_module.lists.contentcoding import Kept

MAX_PAGES = 8
MAX_BYTES = 8 * 1024 * 1024  # a page of 1,000 headers takes about 180,000


@dataclass(frozen=True, slots=True)
class ListStart:
    """A list's first page: the list's size, the page's items (encoded, and deflated once for
    every response that asks for it) and their number, the (datestamp, identifier) of its last
    item, and whether more follow."""

    total: int
    items: Kept
    count: int
    last: tuple[int, str]
    more: bool


@dataclass(frozen=True, slots=True)
class _Entry:
    start: ListStart
    generation: int


class FirstPages:
    """A bounded LRU of first pages by list; thread-safe for gthread workers."""

    def __init__(self, max_pages: int = MAX_PAGES, max_bytes: int = MAX_BYTES) -> None:
        self.max_pages, self.max_bytes = max_pages, max_bytes
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, generation: int) -> ListStart | None:
        """The first page kept for this list, if it was made from this generation."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.generation == generation:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry.start
            if entry is not None:  # the index changed since: it will not serve again
                self._drop(key)
            self.misses += 1
            return None

    def put(self, key: Hashable, generation: int, start: ListStart) -> None:
        if len(start.items) > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = _Entry(start, generation)
            self._bytes += len(start.items)
            while len(self._entries) > self.max_pages or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: Hashable) -> None:
        self._bytes -= len(self._entries.pop(key).start.items)
