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
from harvester.storage.protocol import Resource

log = logging.getLogger(__name__)


class PageArchivist:
    def __init__(
        self, recorder: Recorder, source: PageSource, browser: Browser, *, follow_nofollow: bool
    ) -> None:
        self.recorder, self.source, self.browser = recorder, source, browser
        self.follow_nofollow = follow_nofollow
        # the exchanges archived this run, by method, URL and body: their type and record ID
        self.archived: dict[str, tuple[str, str]] = {}

    async def start(self, commit: Callable[[], None]) -> None:
        await self.browser.start()

    async def archive(self, res: Resource, result: HttpExchange) -> Archived:
        rest = self.source.pages.pop(res.url, None)
        page = None if rest is None else await rest
        if page is None or page.document is not result:
            links = self._served_links(result)
            capture, unchanged = self.recorder.fetched(res, result, outlinks=links)
            return Archived(capture, unchanged, links, 0)
        for exchange in page.exchanges:
            if exchange is not result:
                self._archived_once(exchange)
        for url in dict.fromkeys(page.partial):
            await self._whole(url)
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
        return Archived(capture, unchanged, links, 0)

    def stepped(self, ticket: int) -> None:
        return None

    def one_file(self) -> AbstractContextManager[None]:
        return self.recorder.writer.one_file()

    async def close(self) -> None:
        await self.browser.close()

    async def _whole(self, url: str) -> None:
        """``url`` fetched whole (the page got a part of it), once a run."""
        if f"GET {url}" in self.archived:
            return
        try:
            result = await self.source.fetcher.fetch(url)
        except FetchError as exc:
            log.warning("%s: %s", url, exc)
            return
        self._archived_once(result)

    def _archived_once(self, exchange: HttpExchange) -> None:
        """``exchange``'s group written, unless one of the same request was this run."""
        key = _key(exchange)
        if key not in self.archived:
            capture, _ = self.recorder.fetched(Resource.unknown(exchange.url), exchange)
            self.archived[key] = (_mime(exchange), capture.record_id)

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
