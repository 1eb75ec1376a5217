"""A tab: one page at a time loaded, recorded, scrolled to its end, and read.

:meth:`Tab.start` navigates, waits for the load event (at most the page's time limit: a page
that never stops loading is read as it is then), scrolls to the bottom at once (what comes into
view asks for its part: lazy content) and waits for a quiet network; :meth:`Tab.finish` goes
on scrolling to the bottom while the page, once quiet, no longer ends in view (content
appended below: at most ``scrolls`` times, so an endless scroll ends there), then reads the
rendered page: its links (after its scripts ran), the navigations it asked for, its text and a
screenshot of the viewport at the top. Content a script puts above the viewport does not
call for another scroll: the browser keeps the viewport's content in place (scroll
anchoring), so the bottom stays in view. A page whose document never arrives, or whose tab
crashes, raises :class:`PageFailed`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from harvester.browser.cdp import CDPError, Connection
from harvester.browser.recording import Recording
from harvester.http.exchange import HttpExchange

log = logging.getLogger(__name__)
PATTERNS = [
    {"urlPattern": "*", "requestStage": "Response"},
    {"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"},
]
# Bodies are read through Fetch: the Network domain keeps none (it is on for the bypass of
# service workers, which needs it, and the address each answer came from).
NETWORK = {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}
LINKS = """(() => {
  const out = new Set();
  for (const a of document.querySelectorAll('a[href], area[href]'))
    if (typeof a.href === 'string') out.add(a.href);
  for (const f of document.querySelectorAll('iframe[src], frame[src]')) out.add(f.src);
  return [...out];
})()"""
FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(0))))"
TEXT = "document.body ? document.body.innerText.slice(0, 1000000) : ''"
SCROLL = """(() => {
  const s = document.scrollingElement || document.body;
  if (!s) return 0;
  window.scrollTo(0, s.scrollHeight);
  return s.scrollHeight;
})()"""
BOTTOM = """(() => {
  const s = document.scrollingElement || document.body;
  return !s || s.scrollTop + window.innerHeight >= s.scrollHeight - 2;
})()"""


class PageFailed(Exception):
    """The page could not be loaded: no document, or the tab crashed."""


@dataclass(frozen=True)
class PageLimits:
    seconds: float = 30.0  # the page's time, from navigation to its screenshot
    max_requests: int = 1000
    max_size: int = 100 * 1024 * 1024
    scrolls: int = 20
    idle: float = 0.5  # quiet seconds after which the page's requests are taken as done


@dataclass
class PageCapture:
    url: str
    document: HttpExchange
    exchanges: list[HttpExchange]
    links: list[str] = field(default_factory=list)
    navigations: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    text: str = ""
    screenshot: bytes = b""
    readable: bool = False  # an HTML page, its own (not a redirect)
    rendered: bool = False  # read after its scripts ran
    complete: bool = True  # loaded within its time
    refused: int = 0  # requests failed past the page's cap


class Tab:
    def __init__(self, conn: Connection, target: str, session: str, limits: PageLimits) -> None:
        self.conn, self.target, self.session, self.limits = conn, target, session, limits
        self.crashed = asyncio.Event()
        self._loaded = asyncio.Event()
        self._recording: Recording | None = None
        self._until = 0.0

    @classmethod
    async def open(cls, conn: Connection, limits: PageLimits) -> Tab:
        target = (
            await conn.send("Target.createTarget", {"url": "about:blank", "newWindow": True})
        )["targetId"]
        attached = await conn.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        tab = cls(conn, target, attached["sessionId"], limits)
        conn.on(tab.session, tab._event)
        await tab._send("Page.enable")
        with contextlib.suppress(CDPError):  # an older browser without it: workers run
            await tab._send("Network.enable", NETWORK)  # the bypass works only with it on
            await tab._send("Network.setBypassServiceWorker", {"bypass": True})
        await tab._send("Fetch.enable", {"patterns": PATTERNS})
        return tab

    async def close(self) -> None:
        self.conn.on(self.session, None)
        with contextlib.suppress(CDPError):
            await self.conn.send("Target.closeTarget", {"targetId": self.target}, timeout=10)

    async def load(self, url: str) -> PageCapture:
        """``url`` loaded (:meth:`start`) and read (:meth:`finish`)."""
        return await self.finish(await self.start(url))

    async def start(self, url: str) -> PageCapture:
        """The page's first part: navigated, its document in, scrolled to the bottom at its
        load event and quiet after that.
        :meth:`finish` must follow (the tab is the page's until then)."""
        limits = self.limits
        self._until = until = time.monotonic() + limits.seconds
        rec = Recording(
            url,
            self.target,
            self._send,
            max_requests=limits.max_requests,
            max_size=limits.max_size,
            until=until,
        )
        self._recording, self._loaded = rec, asyncio.Event()
        try:
            return await self._load(url, rec, until)
        except CDPError as exc:
            await self._done(rec)
            raise PageFailed(f"{url}: the browser: {exc}") from exc
        except BaseException:
            await self._done(rec)
            raise

    async def finish(self, page: PageCapture) -> PageCapture:
        """The page's second part: scrolled, read, every request it paused handled. A page
        the browser fails to read is kept as loaded (its links then come from its HTML)."""
        rec, until = self._recording, self._until
        if rec is None:
            raise RuntimeError("a page is finished after it is started")
        try:
            if page.readable:
                await self._read(page, rec, until)
        except CDPError as exc:
            log.info("%s: not read: %s", page.url, exc)
        finally:
            await self._done(rec)
        page.navigations, page.partial, page.refused = rec.navigations, rec.partial, rec.refused
        return page

    async def _done(self, rec: Recording) -> None:
        await self._wait(rec.settle(), self._until + 5)
        self._recording = None

    async def _load(self, url: str, rec: Recording, until: float) -> PageCapture:
        nav = asyncio.ensure_future(
            self._send("Page.navigate", {"url": url}, timeout=self._left(until))
        )
        waited = [nav, *(asyncio.ensure_future(e.wait()) for e in (self._loaded, rec.redirected))]
        crash = asyncio.ensure_future(self.crashed.wait())
        await self._wait(
            asyncio.wait([*waited[1:], crash], return_when=asyncio.FIRST_COMPLETED), until
        )
        for task in (*waited[1:], crash):
            task.cancel()
        if self.crashed.is_set():
            raise PageFailed(f"{url}: the tab crashed")
        complete = self._loaded.is_set() or rec.redirected.is_set()
        with contextlib.suppress(Exception):
            await self._wait(nav, time.monotonic() + 1)
        document = rec.document
        if document is None:
            raise PageFailed(f"{url}: no answer in {self.limits.seconds:g} s")
        page = PageCapture(url, document, rec.exchanges, complete=complete)
        kind = (document.header("Content-Type") or "").lower()
        page.readable = rec.committed and ("html" in kind or not kind)
        if page.readable:
            with contextlib.suppress(CDPError):  # not scrolled: read as it is by finish
                await self._scrolled(rec, until)
            await self._quiet(rec, until)
        return page

    async def _read(self, page: PageCapture, rec: Recording, until: float) -> None:
        """Scrolled to its end, the page's links, text and screenshot."""
        for _ in range(self.limits.scrolls - 1):  # until the bottom stays in view, once quiet
            if time.monotonic() >= until or await self._evaluate(BOTTOM, until):
                break
            await self._scrolled(rec, until)
            await self._quiet(rec, until)
        page.links = [u for u in await self._evaluate(LINKS, until) or [] if _web(u)]
        page.text = str(await self._evaluate(TEXT, until) or "")
        await self._evaluate("window.scrollTo(0, 0)", until)
        shot = await self._send(
            "Page.captureScreenshot", {"format": "png"}, timeout=self._left(until, 10)
        )
        page.screenshot = base64.b64decode(shot.get("data", ""))
        page.rendered = True

    async def _scrolled(self, rec: Recording, until: float) -> None:
        """Scrolled to the bottom; what came into view has asked for its part."""
        await self._evaluate(SCROLL, until)
        await self._evaluate(FRAMES, until)
        rec.last_event = time.monotonic()

    async def _quiet(self, rec: Recording, until: float) -> None:
        """Until no request was paused for ``idle`` seconds and none is being handled."""
        idle = self.limits.idle
        while time.monotonic() < until:
            calm = time.monotonic() - rec.last_event
            if not rec.busy and calm >= idle:
                return
            await asyncio.sleep(min(idle - calm if calm < idle else 0.05, 0.1))

    async def _evaluate(self, expression: str, until: float) -> Any:
        got = await self._send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=self._left(until, 5),
        )
        return got.get("result", {}).get("value")

    async def _send(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0
    ) -> dict[str, Any]:
        return await self.conn.send(method, params, session=self.session, timeout=timeout)

    def _event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Fetch.requestPaused":
            if self._recording is not None:
                self._recording.paused(params)
            else:  # between pages: let it go
                asyncio.get_running_loop().create_task(self._let_go(params["requestId"]))
        elif method in ("Network.responseReceived", "Network.requestWillBeSent"):
            if self._recording is not None:
                self._recording.addressed(params)
        elif method == "Page.loadEventFired":
            self._loaded.set()
        elif method == "Page.javascriptDialogOpening":
            asyncio.get_running_loop().create_task(self._dismiss())
        elif method in ("Inspector.targetCrashed", "Connection.closed", "Inspector.detached"):
            self.crashed.set()

    async def _let_go(self, rid: str) -> None:
        with contextlib.suppress(CDPError):
            await self._send("Fetch.continueRequest", {"requestId": rid})

    async def _dismiss(self) -> None:
        with contextlib.suppress(CDPError):
            await self._send("Page.handleJavaScriptDialog", {"accept": True})

    @staticmethod
    def _left(until: float, least: float = 1.0) -> float:
        return max(least, until - time.monotonic())

    @staticmethod
    async def _wait(awaitable: Any, until: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(awaitable, max(0.0, until - time.monotonic()))


def _web(url: Any) -> bool:
    return isinstance(url, str) and url.startswith(("http://", "https://"))
