"""The crawl's pages from the browser: what the crawler loads its pages with, in browser mode.

The crawler asks for a page with ``fetch_page``: robots.txt is obeyed as the fetcher obeys
it, the page is loaded in the browser and its own document's exchange returned once the page
is quiet after its load (and first scroll), which the crawler records as it does a fetched one
and schedules by: the host rests from then, the delay factor times the document's ``elapsed``
(its navigation to its last byte; the crawl's ``timed_by_answer``), as Heritrix rests by a
URI's fetch, not the page's whole load. The rest of the page (scrolled further, read) goes on
in its tab, a task kept for the archivist (:mod:`harvester.browser.pagearchivist`), which waits
for it. Anything else (a sitemap, robots.txt) is the harvester's fetcher's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from harvester.browser.browser import Browser, PageFailed
from harvester.browser.tab import PageCapture
from harvester.exceptions import PermanentFetchError, TransientFetchError
from harvester.http.exchange import HttpExchange
from harvester.http.fetch import Fetcher
from harvester.http.robots import RobotsCache


class PageSource:
    def __init__(self, fetcher: Fetcher, browser: Browser, *, obey_robots: bool) -> None:
        self.fetcher, self.browser, self.obey_robots = fetcher, browser, obey_robots
        # loaded, being read, not archived yet, by URL asked for
        self.pages: dict[str, asyncio.Task[PageCapture]] = {}

    @property
    def robots(self) -> RobotsCache:
        return self.fetcher.robots

    async def fetch_page(self, url: str, headers: Mapping[str, str]) -> HttpExchange:
        """``url`` loaded in a tab; ``headers`` (a rerun's validators) are not sent: the
        browser asks as it asks."""
        if self.obey_robots:
            await self._allowed(url)
        try:
            page, rest = await self.browser.open(url)
        except PageFailed as exc:  # recorded as failed, not tried again this cycle
            raise PermanentFetchError(str(exc)) from exc
        self.pages[url] = rest
        return page.document

    async def _allowed(self, url: str) -> None:
        rules = await self.robots.rules(url)
        if rules.allows(url, self.robots.token):
            return
        if rules.unreachable:
            raise TransientFetchError(f"robots.txt unreachable for {url}")
        raise PermanentFetchError(f"disallowed by robots.txt: {url}")
