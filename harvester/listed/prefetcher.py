"""The prefetcher: the next item of an iterator made in a thread while the caller works on
this one.

Strategy ``didl`` spends most of a page's time archiving the files it carries (gzip and
digests, which release the GIL for large buffers), and the rest waiting for the next page
(the provider's rendering, the transfer, lxml's parse). :class:`Prefetcher` overlaps the two:
as soon as the caller takes page N, a thread asks for page N+1. At most one item is made
ahead, so memory holds two items at most: the caller's and the next (plus one a chained
prefetcher's thread holds; strategy ``didl`` chains two: :mod:`harvester.listed.listing`).

The thread is the only one to touch the iterator (and so the OAI-PMH client's session) until
:meth:`Prefetcher.close` has joined it. An exception the iterator raises reaches the caller
where it would have without the thread: when it asks for the item that failed.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar, cast

__all__ = ["Prefetcher"]

T = TypeVar("T")
_POLL_S = 0.1  # how often a waiting thread looks whether it is to stop


class Prefetcher(Generic[T]):
    """Iterate over ``items`` one item ahead, in a thread; use it as a context manager, so
    the thread is joined however the iteration ends."""

    def __init__(self, items: Iterator[T], name: str = "prefetcher") -> None:
        self._items = items
        self._ready: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=1)
        self._wanted = threading.Semaphore(1)  # the first item is wanted at once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[T]:
        while True:
            kind, value = self._ready.get()
            if kind == "end":
                return
            if kind == "error":
                raise cast(BaseException, value)
            self._wanted.release()  # the next one is made while the caller works on this
            yield value  # type: ignore[misc]

    def close(self) -> None:
        """Stop asking for items and join the thread; an item it is making is finished
        first (the iterator's own bounds limit how long that takes)."""
        self._stop.set()
        self._thread.join()
        while not self._ready.empty():
            self._ready.get_nowait()

    def __enter__(self) -> Prefetcher[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        try:
            while self._wanted_or_stopped():
                try:
                    item = next(self._items)
                except StopIteration:
                    self._put(("end", None))
                    return
                self._put(("item", item))
        except BaseException as exc:  # handed to the caller, raised where it asks
            self._put(("error", exc))

    def _wanted_or_stopped(self) -> bool:
        """Wait until the caller wants the next item (True) or the prefetcher stops."""
        while not self._stop.is_set():
            if self._wanted.acquire(timeout=_POLL_S):
                return not self._stop.is_set()
        return False

    def _put(self, entry: tuple[str, object]) -> None:
        while not self._stop.is_set():
            try:
                self._ready.put(entry, timeout=_POLL_S)
                return
            except queue.Full:
                continue
