"""Builds the crawl's components from the settings: the factory of the crawl path.

The crawler needs what only a run has (its open state, recorder, fetcher and summary), so the
assembly (``harvester/run/assembly.py``) hands a run a factory bound to the settings
(:func:`harvester.run.crawlfactory.crawler_factory`), which the run calls once those exist; this
module is imported only then."""

from __future__ import annotations

from urllib.parse import urlsplit

from harvester.archive.recorder import Recorder
from harvester.crawl.archivist import (
    ArchiveProcess,
    Archivist,
    InlineArchivist,
    archives_apart,
)
from harvester.crawl.crawler import Crawler, CrawlLimits, PageLoad
from harvester.crawl.frontier import Frontier
from harvester.crawl.leasing import HostLeasing, hosts_at_once
from harvester.crawl.policies import load_policies
from harvester.crawl.quality import OPICScorer
from harvester.crawl.scope import Scope
from harvester.crawl.seen.seenset import SeenSet
from harvester.crawl.twolevel import Politeness, make_scheduler
from harvester.crawl.urls import canonicalize
from harvester.http.fetch import Fetcher
from harvester.settings import HarvestSettings
from harvester.storage.protocol import State
from harvester.summary import Progress, Summary


def build_crawler(
    settings: HarvestSettings,
    state: State,
    recorder: Recorder,
    fetcher: Fetcher,
    summary: Summary,
    deadline: float | None,
    progress: Progress | None = None,
) -> tuple[Crawler, SeenSet]:
    """The crawler, and its seen-URL test (which the caller opens and closes)."""
    seeds = [canonicalize(u) for u in (settings.site_url, *settings.seeds)]
    policies = load_policies(settings.policy)
    seeds += [canonicalize(u) for u in policies.seeds]
    archivist: Archivist
    if settings.browser:  # imported only then
        from harvester.browser.crawlhook import browser_parts

        source, archivist, concurrency = browser_parts(settings, fetcher, recorder, state)
        load_page: PageLoad = source.fetch_page
    else:
        archivist, concurrency = _archivist(settings, state, recorder), settings.concurrency
        load_page = fetcher.fetch_page
    per_host = crawl_per_host(settings)
    politeness = Politeness(
        delay=settings.delay, delay_factor=settings.delay_factor, per_host=per_host
    )
    seen = SeenSet(settings.seen_path, cache_size=settings.seen_cache)
    frontier = Frontier(
        settings.site_url,
        state,
        scheduler=make_scheduler(settings.schedule, politeness=politeness, score=settings.score),
        seen=seen,
        scope=Scope(
            {urlsplit(u).hostname or "" for u in seeds},
            include=settings.include,
            exclude=settings.exclude,
            max_depth=settings.max_depth,
        ),
        scorer=OPICScorer(multiplier=policies.multiplier),
        policies=policies,
    )
    crawler = Crawler(
        settings.site_url,
        list(dict.fromkeys(seeds)),
        state=state,
        frontier=frontier,
        archivist=archivist,
        fetcher=fetcher,
        load_page=load_page,
        concurrency=concurrency,
        limits=CrawlLimits(settings.max_pages, settings.max_bytes, deadline),
        summary=summary,
        progress=progress,
        commits=(settings.commit_every, settings.commit_seconds),
        timed_by_answer=settings.browser,  # a host rests after a page as after its document
        leasing=None
        if state.leases is None
        else HostLeasing(
            state.leases,
            settings.site_url,
            settings.worker_id,
            most=hosts_at_once(concurrency, per_host, settings.delay, settings.delay_factor),
        ),
    )
    return crawler, seen


def crawl_per_host(settings: HarvestSettings) -> int:
    """Pages of one host fetched at once: the setting, or with 0, 2; in browser mode the
    tabs when they are given (a tab is a visitor's page load: browsertrix-crawler's workers
    all load the one site), 2 when they come from the cores.

    >>> from pathlib import Path
    >>> from harvester.settings import HarvestSettings as S
    >>> url = "http://a.example/"
    >>> [crawl_per_host(S(site_url=url, out=Path("o"), **kw)) for kw in
    ...  ({}, {"crawl_per_host": 1}, {"browser": True}, {"browser": True, "browser_tabs": 4})]
    [2, 1, 2, 4]
    """
    if settings.crawl_per_host > 0:
        return settings.crawl_per_host
    return settings.browser_tabs if settings.browser and settings.browser_tabs > 0 else 2


def _archivist(settings: HarvestSettings, state: State, recorder: Recorder) -> Archivist:
    """A process of its own archives, unless the job is shared (``state.leases``): its
    workers use the cores already, and a host must stay busy, so not handed over, until its
    page is acknowledged, which is after the page is archived."""
    apart = state.leases is None and archives_apart(settings.crawl_processes)
    return (ArchiveProcess if apart else InlineArchivist)(
        recorder, follow_nofollow=not settings.respect_nofollow
    )
