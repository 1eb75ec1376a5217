"""The fetch step of the listed path (docs/architecture.md, step 7): every pending resource,
and every failed one whose retry time has come, fetched concurrently and archived, in
commits of ``commit_every``.

A commit's resources go into one WARC file (no rotation inside), so after a crash every
group the state does not know of is in the open file, where the next run's reconcile step
finds it. The state's marks of a commit (archived, failed, abandoned, noted) are held in a
:class:`Marks` while its fetches run and applied together once its groups are written: the
state's write lock is held for that short transaction only, so that several fetching
processes (:mod:`harvester.listed.shards`) can share one SQLite state.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from harvester.archive.recorder import Recorder, conditional_headers
from harvester.clock import http_time
from harvester.exceptions import FetchError, LeaseLost
from harvester.failures import GONE, log_level, settles_gone
from harvester.http.exchange import HttpExchange
from harvester.http.limits import FetchSettings
from harvester.http.pacer import Pacer
from harvester.http.requesturl import origin_prefix
from harvester.listed.chain import fetch_chain
from harvester.listed.sharing import SharedJob
from harvester.settings import HarvestSettings
from harvester.storage import open_state
from harvester.storage.protocol import ACTIVE, Capture, Due, Resource, State
from harvester.summary import Progress, Summary

if TYPE_CHECKING:
    from harvester.http.fetch import Fetcher

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Shard:
    """This process's part of the resources when ``count`` processes fetch: those whose
    URL hashes to ``index`` (:func:`hashed_share`)."""

    index: int = 0
    count: int = 1

    def __contains__(self, url: str) -> bool:
        return self.count == 1 or hashed_share(url, self.count) == self.index


def hashed_share(url: str, count: int) -> int:
    """Which of ``count`` processes fetches ``url``: its CRC-32 scrambled by a
    multiplication (Fibonacci hashing), then scaled to ``count``. CRC-32 alone is linear
    in the URL's bits, so its low bits split names that count up badly: modulo 2, the last
    digit 0 to 7 of ``f0.bin`` ... ``f7.bin`` never changed it, and all went to one process.

    >>> [hashed_share(f"http://h/f{n}.bin", 2) for n in range(8)]
    [1, 1, 0, 1, 1, 0, 0, 0]
    >>> [zlib.crc32(f"http://h/f{n}.bin".encode()) % 2 for n in range(8)]
    [0, 0, 0, 0, 0, 0, 0, 0]
    """
    return ((zlib.crc32(url.encode()) * 0x9E3779B1) & 0xFFFFFFFF) * count >> 32


class StateMarks(Protocol):
    """What a fetch marks in the state: the state itself, or a commit's :class:`Marks`."""

    def mark_archived(self, url: str, capture: Capture, datestamp: str | None) -> None: ...
    def mark_failed(self, url: str, error: str, http_status: int | None = None) -> None: ...
    def abandon(self, url: str, error: str, http_status: int | None = None) -> None: ...
    def mark_gone(self, url: str, http_status: int) -> None: ...
    def note(self, url: str, text: str) -> None: ...


class Marks:
    """A commit's state marks, in order, applied by :meth:`apply` inside one batch."""

    def __init__(self) -> None:
        self._calls: list[Callable[[State], None]] = []

    def mark_archived(self, url: str, capture: Capture, datestamp: str | None) -> None:
        self._calls.append(lambda state: state.mark_archived(url, capture, datestamp))

    def mark_failed(self, url: str, error: str, http_status: int | None = None) -> None:
        self._calls.append(lambda state: state.mark_failed(url, error, http_status))

    def abandon(self, url: str, error: str, http_status: int | None = None) -> None:
        self._calls.append(lambda state: state.abandon(url, error, http_status))

    def mark_gone(self, url: str, http_status: int) -> None:
        self._calls.append(lambda state: state.mark_gone(url, http_status))

    def note(self, url: str, text: str) -> None:
        self._calls.append(lambda state: state.note(url, text))

    def apply(self, state: State) -> None:
        calls, self._calls = self._calls, []
        if calls:
            with state.batch():
                for call in calls:
                    call(state)


@dataclass
class ListedFetch:
    """Fetches the listed resources of ``settings.site_url`` into ``recorder``, keeping the
    state and ``summary``; :meth:`one` is also the records mode's fetch of a linked resource
    (its marks then go to the state at once, inside the ingest's own transactions)."""

    settings: HarvestSettings
    state: State
    summary: Summary
    recorder: Recorder
    fetch_settings: FetchSettings
    pacer: Pacer
    expired: Callable[[], bool]
    progress: Progress = lambda summary, remaining: None
    shared: SharedJob | None = None
    list_started: float | None = None  # the list's start, for _check_stable
    # A failed resource is retried if its wait was over at this time (the run's start): a
    # failure of this run is not fetched again by the same run, however short the wait.
    due_at: float = field(default_factory=time.time)
    # The origins of the resources taken so far: a commit runs only as many workers as
    # can have a request in flight (workers_for), not one waiting on its host's limit.
    origins: set[str] = field(default_factory=set, init=False, repr=False)

    def fetcher(self) -> Fetcher:
        """A fetcher of these settings, not open yet (its module is imported here)."""
        from harvester.http.fetch import Fetcher

        return Fetcher(self.fetch_settings)

    def with_connections(self, concurrency: int, per_host: int) -> ListedFetch:
        """This fetch on at most ``concurrency`` connections, ``per_host`` to a host."""
        return replace(
            self,
            settings=replace(self.settings, concurrency=concurrency, per_host=per_host),
            fetch_settings=replace(
                self.fetch_settings, total_connections=concurrency, per_host=per_host
            ),
        )

    @contextmanager
    def apart(self, **changes: Any) -> Iterator[ListedFetch]:
        """This fetch for another process or thread: its own connection to the state, its
        own WARC files (a :meth:`~harvester.archive.warc.RotatingWARCWriter.sibling` writer,
        finished on the way out), recorder and summary; ``changes`` replace more fields."""
        writer = self.recorder.writer.sibling()
        old = self.recorder
        recorder = Recorder(
            writer, strategy=old.strategy, endpoint=old.endpoint, identifier=old.identifier
        )
        with open_state(self.state.url) as state:
            try:
                yield replace(self, state=state, summary=Summary(), recorder=recorder, **changes)
            finally:
                writer.close()

    def remaining(self) -> int:
        """Resources due now, over every shard."""
        return self.state.count(self.settings.site_url, ACTIVE, due=self._due())

    async def pending(
        self,
        hosts: set[str] | None = None,
        shard: Shard = Shard(),
        total: int | None = None,
        most: int | None = None,
    ) -> int:
        """Fetch every due resource (with ``hosts``, only theirs; only ``shard``'s part; only
        the first ``most``); the resources are read from the state in pages, so memory stays
        flat. Returns how many commits took any."""
        site = self.settings.site_url
        total = self.remaining() if total is None else total
        todo = self.state.resources(site, ACTIVE, due=self._due())
        if hosts is not None:  # a shared job: the hosts leased to this worker
            todo = (r for r in todo if (urlsplit(r.url).hostname or "") in hosts)
        if shard.count > 1:
            todo = (r for r in todo if r.url in shard)
        if most is not None:
            todo = itertools.islice(todo, most)
        rounds = 0
        async with self.fetcher() as fetcher:
            taken = True
            while taken and not self.expired():
                taken = await self.commit(fetcher, todo, total)
                rounds += taken
        return rounds

    async def commit(self, fetcher: Fetcher, todo: Iterator[Resource], total: int) -> bool:
        """One commit: the next resources of ``todo`` fetched into one WARC file, then
        their marks applied to the state in one transaction; whether any was taken."""
        marks = Marks()
        with self.recorder.writer.one_file():
            try:
                return await self._some(fetcher, todo, total, marks)
            finally:
                marks.apply(self.state)

    async def _some(
        self, fetcher: Fetcher, todo: Iterator[Resource], total: int, marks: Marks
    ) -> bool:
        """Fetch the next resources of ``todo`` concurrently, until ``commit_every`` were
        taken, the WARC file is full or time is up; whether any was taken."""
        taken, most = 0, self.settings.commit_every
        writer, origins = self.recorder.writer, self.origins

        def take() -> Resource | None:
            nonlocal taken
            if taken >= most or writer.full() or self.expired():
                return None
            res = next(todo, None)
            if res is not None:
                taken += 1
                origins.add(origin_prefix(res.url))
            return res

        async def worker() -> None:
            while (res := take()) is not None:
                await self.one(fetcher, self.recorder, res, marks)
                self.progress(self.summary, max(total - self.summary.finished, 0))

        workers = workers_for(self.settings.concurrency, self.settings.per_host, len(origins))
        await asyncio.gather(*(worker() for _ in range(workers)))
        return taken > 0

    async def one(
        self, fetcher: Fetcher, recorder: Recorder, res: Resource, marks: StateMarks | None = None
    ) -> tuple[HttpExchange, bool] | None:
        """Fetch ``res`` and the redirects it leads to on its host; archive every hop in one
        group; the state points at the listed URL's own response, the chain's first record.
        Returns the last hop's exchange and whether it was unchanged, or None if it failed.
        ``marks`` (a :class:`Marks`, or the state itself when None) takes the state's marks."""
        marks = self.state if marks is None else marks
        await self.pacer.wait(res.url)
        limit = fetcher.settings.max_redirects
        try:
            hops = await fetch_chain(fetcher, res.url, conditional_headers(res), limit=limit)
        except FetchError as exc:
            self._fail(marks, res, str(exc), getattr(exc, "status", None), log_level(exc))
            return None
        result = hops[-1]
        if result.status in GONE:  # archived, as wget and Heritrix do: replay answers it
            recorder.fetched(res, hops[0], followed=hops[1:])
        if result.status >= 400:
            where = f" at {result.url}" if len(hops) > 1 else ""
            self._fail(marks, res, f"HTTP {result.status} {result.reason}{where}", result.status)
            return None
        capture, unchanged = recorder.fetched(res, hops[0], followed=hops[1:])
        try:
            self._acknowledge(res.url)
        except LeaseLost as exc:  # its host's new holder archives it
            log.warning("%s: %s", res.url, exc)
            return None
        marks.mark_archived(res.url, capture, None)
        self._check_stable(marks, res, result)
        self.summary.bytes += sum(len(hop.body) for hop in hops)
        if unchanged:
            self.summary.unchanged += 1
        else:
            self.summary.fetched += 1
        return result, unchanged

    def _due(self) -> Due:
        return Due(self.due_at, self.settings.retry_delay)

    def _acknowledge(self, url: str) -> None:
        if self.shared is not None:
            self.shared.acknowledge(urlsplit(url).hostname or "", url)

    def _check_stable(self, marks: StateMarks, res: Resource, result: HttpExchange) -> None:
        """Record a resource that changed while, or since, it was listed and fetched.

        A body cut short of its Content-Length (``disconnect``) is fetched again next run; a
        Last-Modified after the list began means a newer version than the one listed was
        captured, which the next incremental list names again.
        """
        if result.truncated == "disconnect":
            self._fail(
                marks, res, "the body ended before its Content-Length (changed mid-transfer?)", None
            )
            return
        modified = http_time(result.header("Last-Modified"))
        if modified is not None and self.list_started is not None and modified > self.list_started:
            note = "changed after it was listed: the capture may be newer than the listed version"
            log.warning("%s: %s", res.url, note)
            marks.note(res.url, note)
            self.summary.changed_during += 1

    def _fail(
        self,
        marks: StateMarks,
        res: Resource,
        error: str,
        status: int | None,
        level: int = logging.WARNING,
    ) -> None:
        """One more failed attempt (:mod:`harvester.failures`): a 404 or 410 repeated makes
        the resource gone; another is retried by a later run after a back-off that doubles
        with each attempt, and abandoned (until a newer version is listed) after the last.
        Only a failure still to be retried counts as the run's ``failed``."""
        attempt = res.attempts + 1
        if settles_gone(res, status):
            log.log(level, "%s: %s again (attempt %d): gone", res.url, error, attempt)
            marks.mark_gone(res.url, status or 0)
            self.summary.gone += 1
            return
        if attempt >= self.settings.max_attempts:
            log.log(level, "%s: %s (attempt %d, the last: abandoned)", res.url, error, attempt)
            marks.abandon(res.url, error, status)
            return
        wait = self.settings.retry_delay * 2 ** (attempt - 1)
        log.log(level, "%s: %s (attempt %d; retried after %.0f s)", res.url, error, attempt, wait)
        marks.mark_failed(res.url, error, status)
        self.summary.failed += 1
        self.summary.errors.append(f"{res.url}: {error}")


def workers_for(concurrency: int, per_host: int, origins: int) -> int:
    """How many workers a commit runs: ``per_host`` for each origin its resources came from so
    far (``concurrency`` before any), at most ``concurrency``. A worker more would only wait
    for a connection to a host at its limit, and a wait costs a timer and a wake-up.

    >>> workers_for(16, 8, 0), workers_for(16, 8, 1), workers_for(16, 4, 3)
    (16, 8, 12)
    """
    return concurrency if not origins else min(concurrency, per_host * origins)
