"""The crawl's archivist in browser mode: a page's whole capture written, in the crawling
process (the browser does the heavy work, in processes of its own).

For each page, in one WARC file, as groups of the recorder's (each closed by its DIDL record):
every exchange the page made that this crawl has not archived yet (a subresource shared by
many pages is archived once a run: the browser still loads it, each time from its cache or
again), the whole of any URL the page got a ``206`` part of (fetched by the harvester's
fetcher), then the page itself with its outlinks (the rendered page's links and the
navigations it asked for; the links of the answer as served for what is not an HTML page),
then the page's group of :mod:`harvester.browser.pagerecords` (screenshot, text, and the
page's DIDL record listing the records it is made of). It starts the browser with the crawl
and stops it at its end.

A resource the page loaded goes through the recorder as a crawled page does: a GET whose
payload is that of the URL's last capture in the state is written as a revisit of it (a
rerun of an unchanged site writes revisits for all of it), and each capture of a GET is
kept in the state (:meth:`~harvester.storage.protocol.ResourceStore.remember_loaded`) in
the page's step, so with its commit, for the next run. A POST's answer is archived whole
each time: the state keeps one capture a URL, which does not say what was posted.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager

from harvester.archive.recorder import Recorder
from harvester.browser.browser import Browser
from harvester.browser.pagerecords import write_page_records
from harvester.browser.pagesource import PageSource
from harvester.crawl.archivist import Archived
from harvester.crawl.links import response_links
from harvester.exceptions import FetchError
from harvester.http.exchange import HttpExchange
from harvester.storage.protocol import Capture, Resource, State

log = logging.getLogger(__name__)


class PageArchivist:
    def __init__(
        self,
        recorder: Recorder,
        source: PageSource,
        browser: Browser,
        state: State,
        site: str,
        *,
        follow_nofollow: bool,
    ) -> None:
        self.recorder, self.source, self.browser = recorder, source, browser
        self.state, self.site = state, site
        self.follow_nofollow = follow_nofollow
        # the exchanges archived this run, by method, URL and body: their type and record ID
        self.archived: dict[str, tuple[str, str]] = {}
        self._tickets = 0
        # by page (its ticket): the captures of what it loaded, kept in the state at its step
        self._loaded: dict[int, list[tuple[str, Capture]]] = {}

    async def start(self, commit: Callable[[], None]) -> None:
        await self.browser.start()

    async def archive(self, res: Resource, result: HttpExchange) -> Archived:
        rest = self.source.pages.pop(res.url, None)
        page = None if rest is None else await rest
        if page is None or page.document is not result:
            links = self._served_links(result)
            capture, unchanged = self.recorder.fetched(res, result, outlinks=links)
            return Archived(capture, unchanged, links, 0)
        loaded: list[tuple[str, Capture]] = []
        for exchange in page.exchanges:
            if exchange is not result:
                self._archived_once(exchange, loaded)
        for url in dict.fromkeys(page.partial):
            await self._whole(url, loaded)
        if not page.complete:
            log.info("%s: still loading at its time limit, archived as it was", res.url)
        if page.rendered:
            links = list(dict.fromkeys([*page.links, *page.navigations]))
        else:
            links = self._served_links(result)
        capture, unchanged = self.recorder.fetched(res, result, outlinks=links)
        parts = [(_mime(result), capture.record_id)]
        parts += [self.archived[_key(e)] for e in page.exchanges if _key(e) in self.archived]
        parts = list(dict.fromkeys(parts))
        write_page_records(self.recorder.writer, page, parts, self.recorder.provenance())
        self._tickets += 1
        self._loaded[self._tickets] = loaded
        return Archived(capture, unchanged, links, self._tickets)

    def stepped(self, ticket: int) -> None:
        """The page's step: the captures of what it loaded kept in the state with it."""
        for url, capture in self._loaded.pop(ticket, ()):
            self.state.remember_loaded(self.site, url, capture)

    def one_file(self) -> AbstractContextManager[None]:
        return self.recorder.writer.one_file()

    async def close(self) -> None:
        await self.browser.close()

    async def _whole(self, url: str, loaded: list[tuple[str, Capture]]) -> None:
        """``url`` fetched whole (the page got a part of it), once a run."""
        if f"GET {url}" in self.archived:
            return
        try:
            result = await self.source.fetcher.fetch(url)
        except FetchError as exc:
            log.warning("%s: %s", url, exc)
            return
        self._archived_once(result, loaded)

    def _archived_once(self, exchange: HttpExchange, loaded: list[tuple[str, Capture]]) -> None:
        """``exchange``'s group written, unless one of the same request was this run: a
        revisit of the URL's last capture when a GET's payload is that capture's."""
        key = _key(exchange)
        if key in self.archived:
            return
        last = self.state.get(exchange.url) if exchange.method == "GET" else None
        capture, _ = self.recorder.fetched(last or Resource(exchange.url), exchange)
        self.archived[key] = (_mime(exchange), capture.record_id)
        if exchange.method == "GET":
            loaded.append((exchange.url, capture))

    def _served_links(self, result: HttpExchange) -> list[str]:
        links = response_links(result, follow_nofollow=self.follow_nofollow)
        return [link.url for link in links]


def _key(exchange: HttpExchange) -> str:
    if not exchange.request_body:
        return f"{exchange.method} {exchange.url}"
    digest = hashlib.sha1(exchange.request_body).hexdigest()
    return f"{exchange.method} {exchange.url} {digest}"


def _mime(exchange: HttpExchange) -> str:
    return (exchange.header("Content-Type") or "").split(";", 1)[0].strip()
