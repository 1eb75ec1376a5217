"""Fetching while a slow list is read (docs/architecture.md, step 7): the listed path's
first GETs leave while the list still waits on the provider, not after its last page.

The list is a chain (a page's request needs the token at the end of the page before). From a
provider across a network, a list of a million files at a second a page of 1,000 takes a
quarter of an hour in which nothing would be fetched. A :class:`ListFollower` uses that
time. The lister hands it each page's URLs once the page is in the state, with the seconds
the page took to arrive; from the first page that took ``SLOW_LIST_S`` or more a URL (of the
largest page so far: a list's last page may hold only a few), a thread of its own fetches
the URLs still pending, in commits as the fetch step makes them
(:meth:`~harvester.listed.fetchstep.ListedFetch.commit`), through its own event loop, connection
to the state and WARC files (:meth:`~harvester.listed.fetchstep.ListedFetch.apart`). The crash
rules are the fetch step's: a group reaches its file before the commit that marks it, a
commit's groups share one file.

A fast list is not followed: the list's own work (parsing, one upsert a header) holds the
GIL, so a thread fetching beside it slowed a 20,000-file list from loopback by as much as it
fetched, and the run by 13 % (``bench/README.md``); its pages arrive in well under a tenth of
``SLOW_LIST_S`` a URL. Nor is strategy ``didl``'s, whose pages carry most files, nor one run
with ``--per-host 1`` or a ``--delay`` (whose spacing the list's requests would not keep).

When the list ends, the follower stops once its commit at hand is written; the fetch step
after the list (:mod:`harvester.listed.shards`) takes whatever is still pending. It holds one
connection fewer than ``--per-host`` and ``--concurrency`` allow, the list having the other,
so the provider never sees more than it was promised. An error in the thread (a full disk)
stops the list at its next page and ends the run with it.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from types import TracebackType

from harvester.listed.fetchstep import ListedFetch
from harvester.settings import HarvestSettings
from harvester.storage.protocol import Resource, State
from harvester.summary import Summary

__all__ = ["ListFollower", "follows"]

SLOW_LIST_S = 0.0005  # seconds a page took, a URL of the largest page, to follow the list
_IDLE_S = 0.01  # how long the thread sleeps when no page has brought anything
_QUEUED_MAX = 10_000  # URLs held for the thread; a list that runs further ahead drops the rest


def follows(settings: HarvestSettings) -> bool:
    """Whether a slow list run with ``settings`` is followed: strategy ``get``'s, not with a
    ``--delay``, nor when the list's own connection leaves none to spare."""
    spare = min(settings.per_host, settings.concurrency) >= 2
    return settings.oai_strategy == "get" and settings.delay <= 0 and spare


class ListFollower:
    """Fetches the listed resources of each page handed to :meth:`follow` while the list
    goes on; use it as a context manager, which stops and joins its thread and adds its
    counts to the run's ``summary``. ``make_fetch`` builds the fetch step at the first page
    (the list's start, which it dates changes by, is known from then on)."""

    def __init__(self, make_fetch: Callable[[], ListedFetch], summary: Summary) -> None:
        self._make_fetch = make_fetch
        self._summary = summary
        self._urls: queue.Queue[str] = queue.Queue(maxsize=_QUEUED_MAX)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._counts: dict[str, object] = {}
        self._largest = 0  # URLs of the largest page so far

    def follow(self, urls: list[str], waited: float) -> None:
        """Queue a listed page's URLs, the page having taken ``waited`` seconds to arrive
        (called by the lister's thread); raise what ended the follower's thread, if anything
        did. Until a page is slow, nothing is queued nor started. URLs beyond what the queue
        holds are left to the fetch after the list: they are pending in the state, and
        memory stays flat."""
        if self._error is not None:
            raise self._error
        self._largest = max(self._largest, len(urls))  # a list's last page may be short
        if self._thread is None:
            if not urls or waited < SLOW_LIST_S * self._largest:
                return
            fetch = self._make_fetch()
            self._thread = threading.Thread(target=self._run, args=(fetch,), name="list-follower")
            self._thread.start()
        try:
            for url in urls:
                self._urls.put_nowait(url)
        except queue.Full:
            pass

    def close(self) -> None:
        """Stop after the commit at hand, join the thread, add its counts; raise its error."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._summary.add_fetches(self._counts)
        self._counts = {}
        if self._error is not None:
            raise self._error

    def __enter__(self) -> ListFollower:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self.close()
        except BaseException:
            if kind is None:  # the list's own error, if any, is the one to report
                raise

    # -- the thread ------------------------------------------------------------------

    def _run(self, fetch: ListedFetch) -> None:
        try:
            settings, stopped = fetch.settings, self._stop.is_set
            one_fewer = fetch.with_connections(settings.concurrency - 1, settings.per_host - 1)
            with one_fewer.apart(
                expired=lambda: stopped() or fetch.expired(),
                progress=lambda summary, remaining: None,
            ) as mine:
                try:
                    asyncio.run(self._fetch(mine))
                finally:
                    self._counts = mine.summary.fetches()
        except BaseException as exc:  # handed to the lister's thread
            self._error = exc

    async def _fetch(self, fetch: ListedFetch) -> None:
        async with fetch.fetcher() as fetcher:
            while not fetch.expired():
                batch = self._pending(fetch.state, fetch.settings.commit_every)
                if batch:
                    await fetch.commit(fetcher, iter(batch), len(batch))
                else:
                    await asyncio.sleep(_IDLE_S)

    def _pending(self, state: State, most: int) -> list[Resource]:
        """Up to ``most`` of the queued URLs' resources that are still pending, each once (a
        list restarted after a refused token names its first pages' URLs again)."""
        batch: dict[str, Resource] = {}
        while len(batch) < most:
            try:
                url = self._urls.get_nowait()
            except queue.Empty:
                break
            res = state.get(url) if url not in batch else None
            if res is not None and res.status == "pending":
                batch[url] = res
        return list(batch.values())
