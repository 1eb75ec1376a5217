"""One harvest run: discovery -> list -> fetch -> archive -> state (docs/architecture.md).

The list comes from an OAI-PMH endpoint (:mod:`harvester.listed.listing`) or a ResourceSync source
(:mod:`harvester.listed.rslisting`); without either, the site is crawled.

A run is resumable at every step. Each list's position is saved after each page; a resource
is marked archived only after its WARC group was written out; and the date each list of the
next incremental run asks ``from`` is that list's own responseDate, held back to the oldest
listed resource still pending, so nothing is skipped. A failed fetch does not hold ``from``
back: the state keeps the resource and a later run tries it again, after a wait that doubles
with each attempt (``retry_delay``), until ``max_attempts`` failures abandon that version.
Rerunning the same command after a crash finishes the job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from coop_common.exitcode import ExitCode
from harvester.archive.cdx.index import CdxIndex
from harvester.archive.formatid.identifier import Identifier, identifier_for
from harvester.archive.recorder import Recorder
from harvester.archive.recorder import ends_group as _ends_group
from harvester.archive.recovery import reconcile
from harvester.archive.repair import repair_open_files
from harvester.archive.warc import RotatingWARCWriter
from harvester.exceptions import HarvestError, RecordsRepository
from harvester.http.limits import FetchSettings
from harvester.http.pacer import Pacer
from harvester.listed.fetchstep import ListedFetch
from harvester.listed.follower import ListFollower, follows
from harvester.listed.listing import Lister
from harvester.listed.resourcesync import ResourceSyncSource
from harvester.listed.rslisting import ResourceSyncLister
from harvester.listed.seed import capture, seed_url
from harvester.listed.shards import fetch_in_processes
from harvester.listed.sharing import SharedJob
from harvester.oai.client import EndpointInfo, parse_oai_datestamp
from harvester.run.crawlfactory import CrawlerFactory
from harvester.run.discovery import discover, endpoint_url, records_mode, source_kind
from harvester.run.lock import CollectionLock
from harvester.run.runlog import RunLog
from harvester.settings import HarvestSettings
from harvester.storage.protocol import Lease, State
from harvester.summary import Progress, Summary

if TYPE_CHECKING:
    from harvester.http.fetch import Fetcher

log = logging.getLogger(__name__)
DISCOVER = "discover:"  # the lease of the job's discovery (one worker probes at a time)
CRAWL = "mode:crawl"  # the job's mark: its site has no provider


class Harvest:
    """One run over components built apart (``assembly.py``'s :func:`build_harvest`), then
    :meth:`run`; the state and the writer open and close with the run."""

    def __init__(
        self,
        settings: HarvestSettings,
        *,
        state: State,
        writer: RotatingWARCWriter,
        index: CdxIndex,
        fetch_settings: FetchSettings,
        crawler_factory: CrawlerFactory,
        progress: Progress | None = None,
    ) -> None:
        self.settings = settings
        self.progress = progress or (lambda summary, remaining: None)
        self.summary = Summary()
        self.state = state
        self.writer = writer
        self.index = index
        self.fetch_settings = fetch_settings
        self.crawler_factory = crawler_factory
        self.pacer = Pacer(settings.delay)
        self._deadline = time.monotonic() + settings.max_time if settings.max_time else None
        self.shared: SharedJob | None = None  # with a state many workers share
        self._undecided = False  # no run has listed the endpoint: its first page decides
        self._started_at = time.time()  # run() sets it again
        self._identifiers: dict[str, Identifier | None] = {}  # --identify, by strategy
        self._run_id: str | None = None  # in runs.jsonl, once its start line is written
        self._label = settings.mode  # the run's mode in runs.jsonl

    def run(self) -> Summary:
        """Harvest once; CollectionInUse while another run holds the collection.

        Every run that holds the lock ends with an end line in ``runs.jsonl`` giving its exit
        code, a failed one included (with a start line too when it failed before writing
        one); only a killed run cannot write it (:mod:`harvester.collection.interruption`).
        """
        start, self._started_at = time.monotonic(), time.time()
        self.settings.out.mkdir(parents=True, exist_ok=True)
        with CollectionLock(self.settings.out, self.settings.lock_name):
            runs = RunLog(self.settings.out)
            self._run_id = None
            try:
                with self.state:
                    self._run(runs)
            except BaseException as exc:
                self._end_line(runs, start, exit_of(exc))
                raise
            self._end_line(runs, start, self.summary.exit_code)
        return self.summary

    def _run(self, runs: RunLog) -> None:
        self.settings.warc_dir.mkdir(parents=True, exist_ok=True)
        repaired = repair_open_files(self.settings.warc_dir, group_end=_ends_group)
        found = self._discover()
        records = isinstance(found, EndpointInfo) and records_mode(self.settings, found, self.state)
        self._undecided = records is None
        kind = "records" if records else source_kind(found)
        oai = {"oai": f"oai-{self.settings.oai_strategy}", "records": "oai-records"}
        strategy = oai.get(kind, kind)
        self.summary.endpoint = endpoint_url(found)
        self.summary.mode = kind
        recorder = Recorder(
            self.writer,
            strategy=strategy,
            endpoint=self.summary.endpoint,
            identifier=self._identifier(strategy),
        )
        label = "records" if kind == "records" else strategy
        self._run_id = runs.started(self.settings.site_url, label, self.summary.endpoint)
        self._label = label
        self.writer.open()
        try:
            self._reconcile(recorder, repaired, archive=found is not None)
            if found is None:
                asyncio.run(self._crawl(recorder))
            elif records and isinstance(found, EndpointInfo):
                asyncio.run(self._ingest(found, recorder))
            else:
                self._list_or_ingest(found, recorder)
        finally:
            self.writer.close()
            for identifier in self._identifiers.values():
                if identifier is not None:
                    identifier.close()
            self._index()
        self._count()

    def _identifier(self, strategy: str) -> Identifier | None:
        """One identification child a strategy at most
        (:mod:`harvester.archive.formatid.identifier`)."""
        if strategy not in self._identifiers:
            self._identifiers[strategy] = identifier_for(self.settings.identify, strategy)
        return self._identifiers[strategy]

    def _end_line(self, runs: RunLog, start: float, exit_code: int) -> None:
        """The run's end line (and its start line, when it failed before writing one)."""
        self.summary.seconds = time.monotonic() - start
        if self._run_id is None:
            self._run_id = runs.started(self.settings.site_url, self._label, None)
        switched = self.summary.mode == "records" and self._label != "records"
        mode = "records" if switched else None
        runs.finished(self._run_id, self.summary.as_dict(), exit_code, mode)

    def _list_or_ingest(self, found: EndpointInfo | ResourceSyncSource, recorder: Recorder) -> None:
        """The listed path; an endpoint whose first list shows it is no mod_oai site (its
        identifiers are not URLs) is ingested in records mode instead."""
        try:
            self._harvest(self._lister(found, recorder), recorder)
        except RecordsRepository as exc:
            if not isinstance(found, EndpointInfo):  # only an OAI-PMH list can show it
                raise
            log.info("%s", exc)
            self.summary.mode = "records"
            records = Recorder(
                self.writer,
                strategy="oai-records",
                endpoint=found.endpoint,
                identifier=self._identifier("oai-records"),
            )
            asyncio.run(self._ingest(found, records))

    def _discover(self) -> EndpointInfo | ResourceSyncSource | None:
        """Step 5. In a job many workers share (``--mode auto``), one worker at a time
        probes, holding the lease ``discover:``; once one found no provider, the others crawl
        without a probe (none of them is sent outside the host's lease while others crawl)."""
        leases, site = self.state.leases, self.settings.site_url
        if leases is None or self.settings.mode != "auto":
            return discover(self.settings, self.state)
        while (turn := leases.claim(site, DISCOVER, self._worker())) is None:
            time.sleep(min(0.25, leases.seconds / 4))  # a dead holder's expires
        try:
            if leases.marked(site, [CRAWL]):
                return discover(replace(self.settings, mode="crawl"), self.state)
            found = discover(self.settings, self.state)
            if found is None:
                leases.mark(site, CRAWL)
            return found
        finally:
            leases.release(site, turn)

    def _lister(
        self, found: EndpointInfo | ResourceSyncSource, recorder: Recorder
    ) -> Lister | ResourceSyncLister:
        if isinstance(found, ResourceSyncSource):
            return ResourceSyncLister(self.settings, self.state, found, self.summary)
        return Lister(
            self.settings, self.state, found, recorder, self.summary, decide_mode=self._undecided
        )

    def _harvest(self, lister: Lister | ResourceSyncLister, recorder: Recorder) -> None:
        """The listed path (OAI-PMH or ResourceSync): list, note deletions, fetch what is
        new or newer."""
        if self.state.leases is not None and isinstance(lister, Lister):
            self.shared = SharedJob(self.state.leases, self.settings.site_url, self._worker())
            try:
                self._harvest_shared(lister, recorder, self.shared)
            finally:
                self.shared.close()
            return
        with ListFollower(lambda: self._listed_fetch(recorder, lister), self.summary) as follower:
            if isinstance(lister, Lister) and follows(self.settings):
                lister.on_page = follower.follow
            list_complete = lister.run(self._expired)
        self._write_deletions(recorder)
        declared = lister.referenced_bytes if isinstance(lister, Lister) else 0
        fetch = self._listed_fetch(recorder, lister)
        fetch_in_processes(fetch, self.settings.fetch_processes, due_bytes=declared)
        self._seed(fetch)
        if list_complete and not self._expired():
            lister.advance_from()

    def _seed(self, fetch: ListedFetch) -> None:
        """The start URL, captured by every listed run (:mod:`harvester.listed.seed`)."""
        url = seed_url(self.settings.site_url, self.summary.endpoint)
        if url is not None and not self._expired():
            capture(fetch, url, self._worker(), self._started_at)

    async def _ingest(self, endpoint: EndpointInfo, recorder: Recorder) -> None:
        """Records mode on a state many workers share: one worker at a time ingests, holding
        the endpoint's list lease (renewed while it runs); the others have nothing to do."""
        self.shared = None  # a listed job's, if the list found a records repository
        if self.state.leases is None:
            await self._ingest_alone(endpoint, recorder)
            return
        job = SharedJob(self.state.leases, self.settings.site_url, self._worker())
        turn = job.list_turn(endpoint.endpoint)
        if turn is None:
            log.info("%s: another worker ingests it", endpoint.endpoint)
            return
        renewing = asyncio.create_task(_renew(job, turn))
        try:
            await self._ingest_alone(endpoint, recorder)
        finally:
            renewing.cancel()
            job.end_turn(turn)
            job.close()

    async def _ingest_alone(self, endpoint: EndpointInfo, recorder: Recorder) -> None:
        """Records mode (``records/ingest.py``): records, linked resources, item DIDLs; with
        ``--linked none`` only the list is fetched: no fetcher is made, nor its module imported."""
        from harvester.records.ingest import Ingest

        opened: AbstractAsyncContextManager[Fetcher | None]
        opened = nullcontext(None) if self.settings.linked == "none" else self._fetcher()
        async with opened as fetcher:
            ingest = Ingest(
                self.settings,
                self.state,
                endpoint,
                recorder,
                self.summary,
                self._listed_fetch(recorder).one,
                fetcher,
            )
            await ingest.run()

    def _fetcher(self) -> Fetcher:
        """A fetcher of the run's settings, not open yet (its module is imported here)."""
        from harvester.http.fetch import Fetcher

        return Fetcher(self.fetch_settings)

    def _listed_fetch(
        self, recorder: Recorder, lister: Lister | ResourceSyncLister | None = None
    ) -> ListedFetch:
        """The fetch step of the listed path; ``lister``'s start dates the changes it notes."""
        started = lister.started() if lister is not None else None
        return ListedFetch(
            self.settings,
            self.state,
            self.summary,
            recorder,
            self.fetch_settings,
            self.pacer,
            self._expired,
            progress=self.progress,
            shared=self.shared,
            list_started=parse_oai_datestamp(started).timestamp() if started else None,
            due_at=self._started_at,
        )

    def _harvest_shared(self, lister: Lister, recorder: Recorder, job: SharedJob) -> None:
        """The OAI-PMH path as one worker of many: list if no one else does, fetch by host."""
        turn = job.list_turn(lister.endpoint.endpoint)
        list_complete = False
        if turn is not None:
            list_complete = lister.run(job.renewing(turn, self._expired))
            self._write_deletions(recorder)
        fetch = self._listed_fetch(recorder, lister)
        while not self._expired() and job.claim_hosts():
            if job.hosts:
                taken = asyncio.run(fetch.pending(set(job.hosts)))
                job.give_back()
                if not taken:  # its hosts' work is not this worker's to do (a bug): stop
                    log.warning("leased hosts with nothing to fetch: %s", sorted(job.hosts))
                    break
        self._seed(fetch)
        if turn is not None:
            if list_complete and not self._expired():
                lister.advance_from()
            job.end_turn(turn)

    def _worker(self) -> str:
        return self.settings.worker_id

    async def _crawl(self, recorder: Recorder) -> None:
        """The link-crawling path, for sites without a provider."""
        async with self._fetcher() as fetcher:
            crawler, seen = self.crawler_factory(
                self.state,
                recorder,
                fetcher,
                self.summary,
                self._deadline,
                self.progress,
            )
            with seen:
                await crawler.run()
            self.summary.seen_hit_rate = round(seen.stats.hit_rate, 4)
            self.summary.refused = sum(crawler.frontier.scope.refused.values())

    # -- steps -----------------------------------------------------------------------

    def _reconcile(self, recorder: Recorder, repaired: list[Path], *, archive: bool) -> None:
        """Groups that reached the disk before the state heard of them (:func:`reconcile`)."""
        reconcile(self.state, self.settings.site_url, recorder.reconcile(repaired), archive=archive)

    def _write_deletions(self, recorder: Recorder) -> None:
        for res in list(self.state.resources(self.settings.site_url, ("deleting",))):
            recorder.deleted(res)
            self.state.mark_deleted(res.url)
            self.summary.deleted += 1

    def _index(self) -> None:
        """Add the WARC files the index does not cover yet (this run's, or a crashed run's);
        a worker of a shared job indexes its own files, into its own CDXJ."""
        mine = f"{self.writer.prefix}-*.warc.gz" if self.settings.worker_id else "*.warc.gz"
        self.index.add_warcs(sorted(self.settings.warc_dir.glob(mine)))

    def _count(self) -> None:
        counts = self.state.counts(self.settings.site_url)
        self.summary.archived = counts.get("archived", 0) + counts.get("deleted", 0)
        self.summary.abandoned = counts.get("abandoned", 0)
        self.summary.known = sum(counts.values())

    # -- helpers ---------------------------------------------------------------------

    def _expired(self) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline


def exit_of(exc: BaseException) -> int:
    """The exit code the command ends with after ``exc`` (as :mod:`coop_common.cli` maps it)."""
    if isinstance(exc, HarvestError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.FAILED


async def _renew(job: SharedJob, lease: Lease) -> None:
    """Renew ``lease`` every quarter of its life until cancelled."""
    check = job.renewing(lease, lambda: False)
    while True:
        await asyncio.sleep(job.leases.seconds / 4)
        if check():
            return
