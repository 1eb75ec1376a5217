"""The crawl loop: fetch what the frontier schedules, archive it, queue what it links to.

Used when a site has no OAI-PMH provider (or with ``--mode crawl``). It writes the same WARC
groups, DIDL records and CDXJ index through the same recorder and state as the OAI-PMH path,
plus a ``metadata`` record of outlinks per page, as Heritrix does; the recorder, and the links'
extraction, are the archivist's (``crawl/archivist.py``: on two cores, a process of its own).

Each fetched page is one step: its WARC group is written out, then the state records the
page as fetched and queues its new links, in a transaction that many steps share
(``crawl/stepbatch.py``: up to ``commit_every`` pages, committed at least every
``commit_seconds``). A crawl killed at any moment resumes from the persisted queue: no
discovered URL is lost, and a page whose step was not committed at the kill is fetched again,
its duplicate caught by payload digest (a revisit record).
Redirects are not followed in place: the 3xx response is archived and its target queued.
A host's rest counts from its answer's end; with ``timed_by_answer`` (browser mode) the fetch
it is a factor of is the answer's own ``elapsed`` (the page's document), else the whole fetch.

With ``leasing`` (a state many workers share), the crawler schedules only the hosts it holds
(``crawl/leasing.py``), rebalances them every ``leasing.poll`` seconds, acknowledges each page
under its host's lease, and ends when no host has work that it could take and no other worker
holds one. A seed host's robots.txt and sitemaps are read by the worker that claims it, under
its lease, once in the job (the mark ``sitemaps:<host>``), before any of its pages: no request
reaches a host outside its lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from harvester.archive.recorder import conditional_headers
from harvester.clock import utcnow
from harvester.crawl.archivist import Archivist
from harvester.crawl.frontier import Frontier
from harvester.crawl.hosts import Fetched
from harvester.crawl.leasing import HostLeasing
from harvester.crawl.sitemaps import sitemap_urls
from harvester.crawl.stepbatch import StepBatch
from harvester.crawl.twolevel import QueuedURL
from harvester.exceptions import (
    ArchiveError,
    FetchError,
    LeaseLost,
    PermanentFetchError,
    StateError,
    TransientFetchError,
)
from harvester.failures import GONE, log_level, settles_gone
from harvester.http.exchange import HttpExchange
from harvester.http.fetch import Fetcher
from harvester.http.retries import parse_retry_after
from harvester.storage.protocol import Resource, State
from harvester.summary import Progress, Summary

# A crawl's page, fetched (plain mode) or loaded in a browser: (url, request headers) -> exchange
PageLoad = Callable[[str, Mapping[str, str]], Awaitable[HttpExchange]]

log = logging.getLogger(__name__)
SITEMAPS = "sitemaps:"  # the job's mark of a seed host whose sitemaps were read


@dataclass
class CrawlLimits:
    max_pages: int | None = None
    max_bytes: int | None = None
    deadline: float | None = None  # time.monotonic() value


class Crawler:
    def __init__(
        self,
        site: str,
        seeds: list[str],
        *,
        state: State,
        frontier: Frontier,
        archivist: Archivist,
        fetcher: Fetcher,
        load_page: PageLoad,
        concurrency: int,
        limits: CrawlLimits,
        summary: Summary,
        progress: Progress | None = None,
        leasing: HostLeasing | None = None,
        commits: tuple[int, float] = (1, 0.0),
        timed_by_answer: bool = False,
    ) -> None:
        self.site, self.seeds = site, seeds
        self.leasing = leasing
        if leasing is not None:
            frontier.owns = leasing.owns
            frontier.shared = True
        self.state, self.frontier, self.fetcher = state, frontier, fetcher
        self.load_page = load_page
        self.archivist, self.timed_by_answer = archivist, timed_by_answer
        self.concurrency = concurrency
        self.limits = limits
        self.summary = summary
        self.progress = progress or (lambda summary, remaining: None)
        self._hosts_seen: set[str] = set()
        self._pages = 0  # fetched
        self._asking = 0  # handed out, not answered yet: with _pages, held to max_pages
        self._visiting: list[str] = []  # the host of each page handed out and not stepped
        self._freed: asyncio.Future[None] | None = None  # the loop's wait, until a host frees
        most, seconds = commits
        self.batch = StepBatch(
            frontier.step,
            archivist.one_file,
            most=1 if leasing is not None else most,  # each acknowledgement under its lease
            seconds=seconds,
        )

    async def run(self) -> bool:
        """Crawl until the frontier is empty or a limit is reached; True when it emptied."""
        await self.archivist.start(self.batch.commit)
        try:
            await self._start()
            try:
                await self._loop()
            finally:
                self.batch.commit()  # the steps done: each is whole (a failed one rolled back)
        except BaseException:
            with contextlib.suppress(ArchiveError):  # the first error is the one to report
                await self.archivist.close()
            raise
        await self.archivist.close()  # its last file finished after the last commit
        if self.leasing is not None:
            self.leasing.close()  # its hosts are free at once, not at their expiry
        return len(self.frontier) == 0 and not self._limited()

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        running: set[asyncio.Task[None]] = set()
        try:
            while not self._limited():
                if self.leasing is not None and self.leasing.due(loop.time()):
                    await self._rebalance(loop.time())
                free = len(running) < self.concurrency
                item = self.frontier.next(loop.time()) if free else None
                if item is not None:  # its host busy until its step (not given up, nor
                    self._asking += 1  # opened again: the page, queued still, would come twice)
                    self._visiting.append(item.host)
                    running.add(asyncio.create_task(self._visit(item)))
                    continue
                if not running and self.frontier.wake_time() is None:
                    with self.batch.step():
                        swept = self.frontier.sweep()
                    if swept:
                        continue  # pages a shorter path reached, to follow from there
                    if self.leasing is None or not await self._more_elsewhere(loop.time()):
                        break  # nothing queued and nothing in flight: the crawl is complete
                    continue
                await self._wait(running, loop.time(), full=not free)
            if running:
                await asyncio.gather(*running)
        finally:  # after an error, the pages in flight stop (they stay queued) and are done
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _start(self) -> None:
        if self.leasing is not None:  # its hosts come with its leases; a cycle starts once
            queued = self.state.requeue_done(self.site)
            self.frontier.open(hosts=())
        else:
            queued = self.frontier.open()
            if queued == 0 and self.state.requeue_done(self.site):
                queued = self.frontier.open()  # a new cycle: revisit everything known
        # A shared crawl reads a seed host's sitemaps under its lease, once claimed.
        fresh = not queued and self.leasing is None
        extra = await self._sitemap_seeds(_origins(self.seeds)) if fresh else []
        added = self.frontier.seed([*self.seeds, *extra])
        log.info("crawl of %s: %d queued, %d seeds added", self.site, queued, added)

    # -- a shared crawl --

    def _leasing(self) -> HostLeasing:
        """The host leases of a shared crawl; only a shared crawl asks for them."""
        if self.leasing is None:
            raise StateError("host leases were asked for in a crawl whose state is not shared")
        return self.leasing

    async def _rebalance(self, now: float) -> bool:
        """Renew, give back and claim hosts (``crawl/leasing.py``); whether any was claimed.
        A seed host claimed whose robots.txt and sitemaps no worker has read yet has them read
        now, under its lease, before any of its pages is handed out."""
        leasing = self._leasing()
        scheduler = self.frontier.scheduler
        before = set(leasing.held)
        claimed, gone = leasing.rebalance(
            now,
            lambda host: host not in self._visiting,
            lambda host: host not in self._visiting and not scheduler.queued_on(host),
            lambda host: scheduler.rest(host, now),
        )
        for host in gone:
            scheduler.drop(host)
        for lease in claimed:
            self.frontier.open(hosts=[lease.host])
            if wait := leasing.wait_before(lease):
                scheduler.not_before(lease.host, now + wait)
        await self._sitemaps_under_leases([c.host for c in claimed if c.host not in before])
        return bool(claimed)

    async def _sitemaps_under_leases(self, hosts: list[str]) -> None:
        leasing = self._leasing()
        seeds = {urlsplit(origin).hostname or "": origin for origin in _origins(self.seeds)}
        hosts = [h for h in hosts if h in seeds]
        if not hosts:
            return
        leases, site = leasing.leases, leasing.site
        read = leases.marked(site, [SITEMAPS + h for h in hosts])
        todo = [h for h in hosts if SITEMAPS + h not in read]
        if todo:
            self.frontier.seed(await self._sitemap_seeds([seeds[h] for h in todo]))
        for host in todo:
            leases.mark(site, SITEMAPS + host)

    async def _more_elsewhere(self, now: float) -> bool:
        """Out of work: whether the job may still have some for this worker (sleeping a
        poll first when nothing could be claimed right now)."""
        leasing = self._leasing()
        if await self._rebalance(now):
            return True
        if not leasing.others_busy() and not leasing.held:
            return False
        await asyncio.sleep(leasing.poll)
        return True

    async def _sitemap_seeds(self, origins: list[str]) -> list[str]:
        """The URLs the sitemaps of ``origins`` name: the origins read at once, each one's
        robots.txt and sitemaps one after another (one request in flight per host)."""
        found = await asyncio.gather(
            *(sitemap_urls(self.fetcher, o, self.frontier.scope.on_site) for o in origins)
        )
        return [url for urls in found for url in urls]

    async def _wait(self, running: set[asyncio.Task[None]], now: float, *, full: bool) -> None:
        """Until a page's task ends, or, with a free slot, a response frees its host (whose
        next URL need not wait for the page's archiving) or the next host becomes eligible,
        or the open batch of steps is due; then commits that batch if it is due."""
        wake = None if full else self.frontier.wake_time()
        timeout = None if wake is None else max(0.0, wake - now)
        if (due := self.batch.due_in()) is not None:
            timeout = due if timeout is None else min(timeout, due)
        if not running:
            await asyncio.sleep(timeout or 0.0)
        else:
            waited: set[asyncio.Future[None]] = set(running)
            if not full:
                self._freed = asyncio.get_running_loop().create_future()
                waited.add(self._freed)
            done, _ = await asyncio.wait(
                waited, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            self._freed = None
            running.difference_update(done)
            errors = [exc for task in done if (exc := task.exception()) is not None]
            if errors:  # a crash of a step itself (a bug, a failed archive), not a fetch error
                raise errors[0]
        # Here, before the next URL is handed out: a commit between handing a URL out and
        # its request would shorten the politeness gap the host sees after it.
        self.batch.commit_if_due()

    def _limited(self) -> bool:
        lim = self.limits
        return (
            (lim.max_pages is not None and self._pages + self._asking >= lim.max_pages)
            or (lim.max_bytes is not None and self.summary.bytes >= lim.max_bytes)
            or (lim.deadline is not None and time.monotonic() >= lim.deadline)
        )

    # -- one URL -----------------------------------------------------------------------

    async def _visit(self, item: QueuedURL) -> None:
        try:
            await self._step(item)
        except LeaseLost as exc:  # rolled back: the host's new holder fetches it again
            log.warning("%s: %s", item.url, exc)
            if self.leasing is not None:
                self.leasing.held.pop(item.host, None)
            self.frontier.scheduler.drop(item.host)
        finally:
            self._visiting.remove(item.host)

    async def _step(self, item: QueuedURL) -> None:
        await self._robots_delay(item)
        started = time.monotonic()
        res = self.state.get(item.url)
        self.frontier.scheduler.sent(item.host, asyncio.get_running_loop().time())
        try:
            result = await self.load_page(item.url, conditional_headers(res))
        except FetchError as exc:
            self._failed(item, exc, time.monotonic() - started)
            return
        finally:
            self._asking -= 1  # and a page fetched counts in _pages, before the next await
        # The host's measurements end here: archiving is our time, not the host's.
        took = result.elapsed if self.timed_by_answer else None
        now = asyncio.get_running_loop().time()
        fetch = Fetched(
            now, result.latency, len(result.body), result.status, _retry_after(result), took
        )
        self.frontier.scheduler.done(item.host, fetch)
        self._host_freed()
        self._pages += 1
        await self._archive(item, res, result)
        self.progress(self.summary, len(self.frontier))

    async def _robots_delay(self, item: QueuedURL) -> None:
        if item.host in self._hosts_seen:
            return
        self._hosts_seen.add(item.host)
        try:
            delay = await self.fetcher.robots.crawl_delay(item.url)
        except FetchError:
            delay = None
        self.frontier.scheduler.set_crawl_delay(item.host, delay)

    async def _archive(self, item: QueuedURL, res: Resource | None, result: HttpExchange) -> None:
        if res is None:
            raise StateError(f"{item.url}: a queued URL without a resource row")
        if result.status in GONE:  # the failure lifecycle: harvester/failures.py
            # Archived, as wget and Heritrix do, so that replay answers the site's own 404;
            # its links are not followed.
            gone = settles_gone(res, result.status)
            error = f"HTTP {result.status} {result.reason}"
            log.warning("%s: %s%s", item.url, error, " again: gone" if gone else "")
            answer = await self.archivist.archive(res, result)
            with self.batch.step():
                self._acknowledge(item)
                if gone:
                    self.state.mark_gone(item.url, result.status)
                else:
                    self.state.mark_failed(item.url, error, result.status)
                self.state.dequeue(item.url)
                self.archivist.stepped(answer.ticket)
            if gone:
                self.summary.gone += 1
            else:
                self.summary.failed += 1
            return
        archived = await self.archivist.archive(res, result)
        with self.batch.step():
            self._acknowledge(item)
            self.state.mark_archived(item.url, archived.capture, None)
            self.state.dequeue(item.url)
            self.frontier.discovered(item, archived.links)
            self.archivist.stepped(archived.ticket)
        self.summary.bytes += len(result.body)
        if archived.unchanged:
            self.summary.unchanged += 1
        else:
            self.summary.fetched += 1

    def _acknowledge(self, item: QueuedURL) -> None:
        if self.leasing is not None:
            if item.host not in self.leasing.held:
                raise LeaseLost(f"the lease on {item.host} was lost while {item.url} was fetched")
            self.leasing.acknowledge(item.host, item.url)

    def _failed(self, item: QueuedURL, exc: FetchError, latency: float) -> None:
        status = getattr(exc, "status", None)
        log.log(log_level(exc), "%s: %s", item.url, exc)
        with self.batch.step():
            self._acknowledge(item)
            self.state.mark_failed(item.url, str(exc), status)
            if isinstance(exc, PermanentFetchError):
                self.state.dequeue(item.url)  # robots, loops: not retried this cycle
        self.summary.failed += 1
        retry = exc.retry_after if isinstance(exc, TransientFetchError) else None
        now = asyncio.get_running_loop().time()
        fetch = Fetched(now, latency, 0, status or 599, retry)
        self.frontier.scheduler.done(item.host, fetch)

    def _host_freed(self) -> None:
        """Wake the loop, if it waits with a free slot: a response is in, so its host may be
        asked for its next URL while this page is archived (a failed fetch's task ends at
        once, which wakes the loop anyway)."""
        if self._freed is not None and not self._freed.done():
            self._freed.set_result(None)


def _retry_after(result: HttpExchange) -> float | None:
    value = result.header("Retry-After")
    return parse_retry_after(value, utcnow()) if value else None


def _origins(seeds: list[str]) -> list[str]:
    """The seeds' origins, each once, in order.

    >>> _origins(["http://a.example/x", "http://a.example/y", "https://b.example:8443/"])
    ['http://a.example/', 'https://b.example:8443/']
    """
    return list(dict.fromkeys(f"{p.scheme}://{p.netloc}/" for p in map(urlsplit, seeds)))
