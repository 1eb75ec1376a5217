"""Browser mode's parts of a crawl, made from the settings: the crawler's page source (what it
loads pages with) and its archivist, sharing one :class:`~harvester.browser.browser.Browser`."""

from __future__ import annotations

from harvester.archive.recorder import Recorder
from harvester.browser.browser import Browser, default_tabs
from harvester.browser.pagearchivist import PageArchivist
from harvester.browser.pagesource import PageSource
from harvester.browser.tab import PageLimits
from harvester.http.fetch import Fetcher
from harvester.settings import HarvestSettings
from harvester.storage.protocol import State


def browser_parts(
    settings: HarvestSettings, fetcher: Fetcher, recorder: Recorder, state: State
) -> tuple[PageSource, PageArchivist, int]:
    """The page source, the archivist, and how many pages are loaded at once (the tabs)."""
    tabs = default_tabs(settings.browser_tabs)
    limits = PageLimits(
        seconds=settings.browser_page_time,
        max_requests=settings.browser_max_requests,
        max_size=settings.max_size,
    )
    browser = Browser(settings.browser_executable, tabs, limits, settings.browser_max_rss)
    source = PageSource(fetcher, browser, obey_robots=not settings.ignore_robots)
    archivist = PageArchivist(
        recorder,
        source,
        browser,
        state,
        settings.site_url,
        follow_nofollow=not settings.respect_nofollow,
    )
    return source, archivist, tabs
