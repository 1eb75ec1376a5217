"""``harvester watch``: keep collections current at a fixed budget until stopped.

Each source has its own collection. A crawled source's URLs are revisited in the order of
one :mod:`~harvester.recrawl.policy` shared by every crawled source, one fetch at a time,
each taking a token of the watch's :class:`~harvester.watch.tokenbucket.TokenBucket` (``--rate``),
spent at once on the URL the policy picks (the one due, or the one most likely to have
changed: :meth:`~harvester.recrawl.policy.HeapPolicy.pick`), and waiting out its host's
``--delay`` (:class:`~harvester.http.pacer.Pacer`): a conditional
GET through :mod:`harvester.http.fetch`, recorded by :mod:`harvester.archive.recorder` (a revisit
record when the server says 304 or the payload digest is the same); a new version's links on
the source's host are queued at once. The collection's state marks the capture archived and
keeps the URL's observations and next due time (:mod:`harvester.storage.sqlite.recrawl`) in one
transaction made after the WARC group is on disk, so SIGKILL loses nothing: the restart
repairs the open WARC file, counts the groups the state never heard of as archived, and
continues with what it had learned. SIGTERM and SIGINT finish the fetch under way and stop.

An OAI-PMH source is polled: the incremental harvest (:class:`~harvester.run.harvest.Harvest`),
whose ListIdentifiers asks ``from`` its last list (one request when nothing changed) and
fetches only what was listed, every :data:`POLL_FLOOR` seconds (or the source's
``min_interval``) while it changes, backing off when nothing changed for long or a poll fails
(a 503 included): :func:`poll_interval`. What each poll archived counts in the summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import signal
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from harvester.archive.cdx.index import CdxIndex
from harvester.archive.formatid.identifier import identifier_for
from harvester.archive.recorder import Recorder, conditional_headers
from harvester.archive.recorder import ends_group as _ends_group
from harvester.archive.warc import RotatingWARCWriter, repair_open_files
from harvester.clock import http_time
from harvester.crawl.links import extract_links
from harvester.exceptions import ArchiveError, FetchError, HarvestError
from harvester.http.exchange import HttpExchange
from harvester.http.fetch import Fetcher
from harvester.http.limits import FetchSettings, fetch_settings
from harvester.http.pacer import Pacer
from harvester.recrawl.policy import Entry, HeapPolicy, Visit, make_policy
from harvester.run.assembly import build_harvest, warc_prefix
from harvester.run.discovery import discover
from harvester.run.lock import CollectionLock
from harvester.settings import HarvestSettings
from harvester.storage import open_state
from harvester.storage.postgres.schema import postgres_ddl
from harvester.storage.protocol import State
from harvester.storage.sqlite.recrawl import SCHEMA as REVISITS
from harvester.storage.sqlite.recrawl import RecrawlState
from harvester.summary import Summary
from harvester.watch.sources import Source
from harvester.watch.tokenbucket import TokenBucket

log = logging.getLogger(__name__)
IDLE = 1.0  # seconds between checks of the stop flag while waiting
POLL_FLOOR = 2.0  # seconds between two polls of a source, at least (by default)
POLL_CEILING = 300.0  # seconds between two polls, at most, however long nothing changed


@dataclass
class WatchSummary:
    fetches: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    new_urls: int = 0
    polls: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float | int]:
        return dict(vars(self))


@dataclass
class Collection:
    """One crawled source's open collection: its state, WARC writer and recorder."""

    source: Source
    settings: HarvestSettings
    state: State
    revisits: RecrawlState
    writer: RotatingWARCWriter
    recorder: Recorder
    host: str = field(init=False)

    def __post_init__(self) -> None:
        self.host = urlsplit(self.source.url).netloc


class Watch:
    """Build with sources and the budget, then ``await run()``."""

    def __init__(
        self,
        sources: list[Source],
        *,
        rate: float,
        revisit: str = "adaptive",
        max_time: float | None = None,
        delay: float = 0.0,
        base: HarvestSettings | None = None,
    ) -> None:
        self.sources = sources
        self.bucket = TokenBucket(rate)
        self.policy: HeapPolicy = make_policy(revisit, rate)
        self.deadline = time.monotonic() + max_time if max_time else math.inf
        self.pacer = Pacer(delay)
        self.base = base
        self.stop = asyncio.Event()
        self.summary = WatchSummary()
        self._owner: dict[str, Collection] = {}

    # -- the run -----------------------------------------------------------------------

    async def run(self) -> WatchSummary:
        start = time.monotonic()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop.set)
        try:
            with contextlib.ExitStack() as stack:
                crawled, polled = self._open(stack)
                tasks = [self._poll(source) for source in polled]
                if crawled:
                    tasks.append(self._revisit(crawled))
                await asyncio.gather(*tasks)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
        self.summary.seconds = round(time.monotonic() - start, 3)
        return self.summary

    def _open(self, stack: contextlib.ExitStack) -> tuple[list[Collection], list[Source]]:
        crawled, polled = [], []
        for source in self.sources:
            settings = self._settings(source)
            if source.mode == "oai" or (source.mode == "auto" and _has_endpoint(settings)):
                polled.append(source)
                continue
            crawled.append(self._open_collection(stack, source, settings))
        return crawled, polled

    def _settings(self, source: Source) -> HarvestSettings:
        mode = "crawl" if source.mode == "crawl" else source.mode
        if self.base is None:
            return HarvestSettings(site_url=source.url, out=source.out, mode=mode, quiet=True)
        return replace(self.base, site_url=source.url, out=source.out, mode=mode)

    def _open_collection(
        self, stack: contextlib.ExitStack, source: Source, settings: HarvestSettings
    ) -> Collection:
        settings.out.mkdir(parents=True, exist_ok=True)
        stack.enter_context(CollectionLock(settings.out))
        state = stack.enter_context(open_state(settings.state_url))
        settings.warc_dir.mkdir(parents=True, exist_ok=True)
        repaired = repair_open_files(settings.warc_dir, group_end=_ends_group)
        index = CdxIndex(settings.cdx_path)
        # last of all, the files the index does not cover yet (a killed watch's, repaired)
        stack.callback(lambda: index.add_warcs(sorted(settings.warc_dir.glob("*.warc.gz"))))
        writer = RotatingWARCWriter(
            settings.warc_dir,
            prefix=warc_prefix(source.url),
            max_size=settings.warc_max_size,
            warcinfo={"software": "coop-archive-harvester watch", "isPartOf": source.url},
            durable=settings.durable,
            on_finish=lambda name, lines: _index_lines(index, name, lines),
        )
        writer.open()
        stack.callback(writer.close)
        recorder = Recorder(
            writer,
            strategy="crawl",
            endpoint=None,
            identifier=identifier_for(settings.identify, "crawl"),
        )
        revisits = RecrawlState(state.db, postgres_ddl(REVISITS) if settings.shared else REVISITS)
        collection = Collection(source, settings, state, revisits, writer, recorder)
        self._recover(collection, repaired)
        self._load(collection)
        return collection

    def _recover(self, collection: Collection, repaired: list[Path]) -> None:
        """Groups a killed watch wrote but never marked: archived now (nothing refetched)."""
        state = collection.state
        found = collection.recorder.reconcile(repaired)
        known = state.known_record_ids(c.record_id for _u, c in found)
        for url, capture in found:
            if capture.record_id not in known and state.get(url) is not None:
                state.mark_archived(url, capture, None)

    def _load(self, collection: Collection) -> None:
        site = collection.source.url
        entries = list(collection.revisits.entries(site))
        if not entries:
            collection.state.add_pending(site, [site])
            entries = [Entry(site, collection.source.bounds, due=time.time())]
            with collection.state.transaction():
                collection.revisits.save(site, entries[0])
        for entry in entries:
            self.policy.add(replace(entry, weight=collection.source.weight))
            self._owner[entry.url] = collection

    # -- crawled sources ---------------------------------------------------------------

    async def _revisit(self, crawled: list[Collection]) -> None:
        async with Fetcher(self._fetch_settings(crawled[0].settings)) as fetcher:
            while not self._stopping():
                await self.bucket.take()  # a fetch of the budget in hand: spend it if any URL
                entry = self.policy.pick(time.time())  # is due or worth fetching early
                if entry is None:
                    if (first := self.policy.next()) is None:
                        return
                    soon = time.time() + 1 / self.bucket.rate  # a URL may pass its floor
                    if not await self._wait_until(min(self.policy.at(first), soon)):
                        return
                    continue
                await self.pacer.wait(entry.url)
                await self._visit(fetcher, entry)

    async def _visit(self, fetcher: Fetcher, entry: Entry) -> None:
        collection = self._owner[entry.url]
        res = collection.state.get(entry.url)
        self.summary.fetches += 1
        try:
            result = await fetcher.fetch(entry.url, headers=conditional_headers(res))
        except FetchError as exc:
            self._failed(collection, entry, str(exc))
            return
        if res is None or result.status >= 400 or 300 <= result.status < 304:
            self._failed(collection, entry, f"HTTP {result.status} {result.reason}")
            return
        capture, unchanged = collection.recorder.fetched(res, result)
        now = time.time()
        visit = Visit(now, not unchanged, http_time(result.header("Last-Modified")))
        updated = self.policy.visited(entry.url, visit)
        links = [] if unchanged else self._new_links(collection, result)
        with collection.state.transaction():
            collection.state.mark_archived(entry.url, capture, None)
            collection.revisits.save(collection.source.url, updated)
            self._queue(collection, links, now)
        self.summary.unchanged += unchanged
        self.summary.changed += not unchanged

    def _failed(self, collection: Collection, entry: Entry, error: str) -> None:
        log.warning("%s: %s", entry.url, error)
        self.summary.failed += 1
        updated = self.policy.visited(entry.url, Visit(time.time(), False))
        with collection.state.transaction():
            collection.state.mark_failed(entry.url, error)
            collection.revisits.save(collection.source.url, updated)

    def _new_links(self, collection: Collection, result: HttpExchange) -> list[str]:
        """The links of a new version on the source's host that are not watched yet."""
        links = extract_links(
            result.body, result.url, result.header("Content-Type"), result.response_headers
        )
        new = []
        for link in links:
            parts = urlsplit(link.url)
            if parts.netloc == collection.host and link.url not in self._owner:
                new.append(link.url)
        return list(dict.fromkeys(new))

    def _queue(self, collection: Collection, urls: list[str], now: float) -> None:
        """Watch ``urls`` from now (inside the caller's transaction)."""
        site = collection.source.url
        for url in urls:
            collection.revisits.add_resource(site, url, now)
            entry = Entry(url, collection.source.bounds, due=now, weight=collection.source.weight)
            collection.revisits.save(site, entry)
            self.policy.add(entry)
            self._owner[url] = collection
        self.summary.new_urls += len(urls)

    # -- polled sources ----------------------------------------------------------------

    async def _poll(self, source: Source) -> None:
        """Harvest ``source`` incrementally, every :func:`poll_interval` seconds."""
        quiet_since, failures = time.monotonic(), 0
        floor = source.bounds.min_interval or POLL_FLOOR
        ceiling = max(min(source.bounds.max_interval, POLL_CEILING), floor)
        while not self._stopping():
            await self.bucket.take()
            settings = replace(self._settings(source), max_time=self._remaining())
            try:
                summary: Summary | None = await asyncio.to_thread(build_harvest(settings).run)
            except HarvestError as exc:
                log.warning("%s: poll failed: %s", source.url, exc)
                summary = None
            self.summary.polls += 1
            if summary is None or summary.lists_failed:
                failures += 1
            else:
                failures = 0
                if self._count(summary):
                    quiet_since = time.monotonic()
            quiet = time.monotonic() - quiet_since
            wait = poll_interval(floor, ceiling, quiet, failures)
            log.info("%s: polled; next poll in %.1f s", source.url, wait)
            if not await self._wait_until(time.time() + wait):
                return

    def _count(self, summary: Summary) -> int:
        """Add what a poll archived to the watch's summary; how many changes it archived."""
        self.summary.fetches += summary.fetched + summary.unchanged + summary.failed
        self.summary.changed += summary.fetched + summary.deleted
        self.summary.unchanged += summary.unchanged
        self.summary.failed += summary.failed
        return summary.fetched + summary.deleted

    # -- helpers -----------------------------------------------------------------------

    def _stopping(self) -> bool:
        return self.stop.is_set() or time.monotonic() >= self.deadline

    def _remaining(self) -> float | None:
        return None if self.deadline == math.inf else max(self.deadline - time.monotonic(), 1.0)

    async def _wait_until(self, at: float) -> bool:
        """Sleep until epoch ``at``; False when the watch is to stop first."""
        while (wait := at - time.time()) > 0:
            if self._stopping():
                return False
            timeout = min(wait, IDLE, max(self.deadline - time.monotonic(), 0.0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout)
        return not self._stopping()

    @staticmethod
    def _fetch_settings(settings: HarvestSettings) -> FetchSettings:
        """One connection per host, four in all: the watch fetches at ``--rate``."""
        return fetch_settings(replace(settings, per_host=1, concurrency=4))


def poll_interval(floor: float, ceiling: float, quiet: float, failures: int) -> float:
    """Seconds to the next poll of a source: ``floor``, growing with the time nothing
    changed (a tenth of it), doubled after each failed poll in a row (a 503 included),
    ``ceiling`` at most.

    >>> poll_interval(2, 300, 0, 0), poll_interval(2, 300, 100, 0), poll_interval(2, 300, 0, 3)
    (2, 10.0, 16)
    >>> poll_interval(2, 300, 1e6, 0), poll_interval(2, 300, 0, 20)
    (300, 300)
    """
    return min(max(floor, quiet / 10) * 2 ** min(failures, 16), ceiling)


def _has_endpoint(settings: HarvestSettings) -> bool:
    settings.out.mkdir(parents=True, exist_ok=True)
    with open_state(settings.state_url) as state:
        return discover(settings, state) is not None


def _index_lines(index: CdxIndex, warc_name: str, lines: list[str]) -> None:
    """A finished file indexed from the lines made writing it (else read back at the end)."""
    try:
        index.add_lines(warc_name, lines)
    except ArchiveError as exc:
        log.warning("cannot index %s yet: %s", warc_name, exc)
