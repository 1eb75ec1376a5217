"""The ``bench browser`` peer: Chromium recording through warcprox, as brozzler records.

``python -m bench.browserpeer URL WARCS --tabs T --warcprox BIN``: warcprox (its own virtual
environment) writes WARC files into ``WARCS``; Chromium, the same binary and flags as
``--browser``'s (``FLAGS``; not its renderer process limit, which brozzler does not set) but
with warcprox as its proxy (loopback not bypassed), loads the site page by
page in ``T`` tabs, each page driven as brozzler drives one: navigate, wait for the load event
and a quiet network, scroll to the bottom until the page stops growing, read the links (the
site's own host only, each page once). Prints the pages loaded as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harvester.browser.cdp import Connection
from harvester.browser.chromium import Chromium
from harvester.browser.tab import FRAMES, LINKS, SCROLL
from tests.servers import free_port, wait_until_answers

HEIGHT = "(document.scrollingElement || document.body || {}).scrollHeight || 0"
PAGE_TIME = 30.0
IDLE = 0.5
SCROLLS = 20


class PeerTab:
    """A tab driven without interception: the proxy records what the page loads."""

    def __init__(self, conn: Connection, session: str) -> None:
        self.conn, self.session = conn, session
        self.loaded = asyncio.Event()
        self.inflight: set[str] = set()
        self.last = time.monotonic()

    @classmethod
    async def open(cls, conn: Connection) -> PeerTab:
        made = await conn.send("Target.createTarget", {"url": "about:blank", "newWindow": True})
        got = await conn.send(
            "Target.attachToTarget", {"targetId": made["targetId"], "flatten": True}
        )
        tab = cls(conn, got["sessionId"])
        conn.on(tab.session, tab.event)
        await tab.send("Page.enable")
        await tab.send("Network.enable")
        return tab

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.conn.send(method, params, session=self.session, timeout=PAGE_TIME)

    def event(self, method: str, params: dict[str, Any]) -> None:
        self.last = time.monotonic()
        if method == "Page.loadEventFired":
            self.loaded.set()
        elif method == "Network.requestWillBeSent":
            self.inflight.add(params["requestId"])
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            self.inflight.discard(params["requestId"])

    async def quiet(self, until: float) -> None:
        while time.monotonic() < until:
            if not self.inflight and time.monotonic() - self.last >= IDLE:
                return
            await asyncio.sleep(0.05)

    async def evaluate(self, expression: str) -> Any:
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        got = await self.send("Runtime.evaluate", params)
        return got.get("result", {}).get("value")

    async def load(self, url: str) -> list[str]:
        until = time.monotonic() + PAGE_TIME
        self.loaded = asyncio.Event()
        self.inflight.clear()
        await self.send("Page.navigate", {"url": url})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.loaded.wait(), PAGE_TIME)
        await self.quiet(until)
        for _ in range(SCROLLS):  # as brozzler scrolls: to the bottom, until it stops growing
            before = await self.evaluate(SCROLL)
            await self.evaluate(FRAMES)
            self.last = time.monotonic()
            await self.quiet(until)
            if (await self.evaluate(HEIGHT) or 0) <= (before or 0):
                break
        return list(await self.evaluate(LINKS) or [])


async def crawl(url: str, tabs: int, proxy: str) -> int:
    chromium = Chromium("chromium", (f"--proxy-server={proxy}", "--proxy-bypass-list=<-loopback>"))
    conn = await Connection.open(await chromium.start())
    host = urlsplit(url).netloc
    seen, queue = {url}, asyncio.Queue[str]()
    queue.put_nowait(url)
    pages = 0

    async def worker(tab: PeerTab) -> None:
        nonlocal pages
        while True:
            page = await queue.get()
            try:
                for link in await tab.load(page):
                    link = link.split("#", 1)[0]
                    if urlsplit(link).netloc == host and link not in seen:
                        seen.add(link)
                        queue.put_nowait(link)
                pages += 1
            finally:
                queue.task_done()

    workers = [asyncio.create_task(worker(await PeerTab.open(conn))) for _ in range(tabs)]
    await queue.join()
    for task in workers:
        task.cancel()
    with contextlib.suppress(Exception):
        await conn.send("Browser.close", timeout=5)
    await conn.close()
    await chromium.close()
    return pages


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench.browserpeer")
    parser.add_argument("url")
    parser.add_argument("warcs", type=Path)
    parser.add_argument("--tabs", type=int, required=True)
    parser.add_argument("--warcprox", required=True)
    args = parser.parse_args(argv)
    port = free_port()
    args.warcs.mkdir(parents=True, exist_ok=True)
    proxy = subprocess.Popen(
        [args.warcprox, "-b", "127.0.0.1", "-p", str(port), "-d", str(args.warcs), "-z",
         "-c", str(args.warcs / "ca.pem"), "--certs-dir", str(args.warcs / "certs"),
         "--dedup-db-file", str(args.warcs / "dedup.db"),
         "--stats-db-file", str(args.warcs / "stats.db"), "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/", proxy, 60.0)  # type: ignore[arg-type]
        pages = asyncio.run(crawl(args.url, args.tabs, f"http://127.0.0.1:{port}"))
    finally:
        proxy.terminate()  # warcprox finishes its WARC file on SIGTERM
        proxy.wait(timeout=120)
    print(json.dumps({"pages": pages}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
