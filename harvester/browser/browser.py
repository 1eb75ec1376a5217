"""The browser a crawl loads its pages in: one Chromium, ``tabs`` tabs, a page per free tab.

Past ``max_rss`` bytes resident (the browser's processes together, checked after a page, at
most once every ``MEMORY_EVERY`` seconds, in a thread: reading every process's
``smaps_rollup`` takes the kernel 40-80 ms) the browser is restarted once its tabs are free;
so is it after a crash of the browser itself. A tab that crashed is replaced by a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time

from harvester.browser.cdp import CDPError, Connection
from harvester.browser.chromium import Chromium, renderer_flags
from harvester.browser.tab import PageCapture, PageFailed, PageLimits, Tab

log = logging.getLogger(__name__)
MEMORY_EVERY = 5.0  # seconds between two looks at the browser's memory; a new one's at once


def default_tabs(wanted: int, cores: int | None = None) -> int:
    """``wanted``, or with 0 one a core, 2 to 8.

    >>> default_tabs(0, 1), default_tabs(0, 4), default_tabs(0, 32), default_tabs(3, 32)
    (2, 4, 8, 3)
    """
    if wanted > 0:
        return wanted
    return max(2, min(8, cores if cores is not None else os.cpu_count() or 1))


class Browser:
    def __init__(self, executable: str, tabs: int, limits: PageLimits, max_rss: int) -> None:
        self.chromium = Chromium(executable, renderer_flags(tabs))
        self.tabs, self.limits, self.max_rss = tabs, limits, max_rss
        self.conn: Connection | None = None
        self.peak_rss = 0
        self.restarts = 0
        self._free: asyncio.Queue[Tab] = asyncio.Queue()
        self._busy = 0
        self._idle = asyncio.Condition()
        self._restart = False
        self._measured = -math.inf  # when the browser's memory was last looked at

    async def start(self) -> None:
        self._measured = -math.inf
        url = await self.chromium.start()
        self.conn = await Connection.open(url)
        for _ in range(self.tabs):
            self._free.put_nowait(await Tab.open(self.conn, self.limits))

    async def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(CDPError):
                await self.conn.send("Browser.close", timeout=5)
            await self.conn.close()
            self.conn = None
        await self.chromium.close()
        self._free = asyncio.Queue()

    async def load(self, url: str) -> PageCapture:
        """``url`` loaded and read in the next free tab (:meth:`Tab.load`)."""
        _, rest = await self.open(url)
        return await rest

    async def open(self, url: str) -> tuple[PageCapture, asyncio.Task[PageCapture]]:
        """``url`` loaded in the next free tab (:meth:`Tab.start`), and the task that reads it
        (:meth:`Tab.finish`), after which the tab is free again."""
        async with self._idle:
            await self._idle.wait_for(lambda: not self._restart)
        tab = await self._free.get()
        self._busy += 1
        try:
            page = await tab.start(url)
        except BaseException:
            await self._release(tab)
            raise
        return page, asyncio.get_running_loop().create_task(self._finished(tab, page))

    async def _finished(self, tab: Tab, page: PageCapture) -> PageCapture:
        try:
            return await tab.finish(page)
        finally:
            await self._release(tab)

    async def _release(self, tab: Tab) -> None:
        tab = await self._after(tab)
        self._busy -= 1
        self._free.put_nowait(tab)
        async with self._idle:
            self._idle.notify_all()
        if self._restart and self._busy == 0:
            await self._restarted()

    async def _after(self, tab: Tab) -> Tab:
        """The tab to put back: ``tab``, or a new one for a crashed one; a restart asked for
        when the browser grew past its bound or died."""
        if time.monotonic() - self._measured >= MEMORY_EVERY:
            self._measured = time.monotonic()
            rss = await asyncio.to_thread(self.chromium.rss)
            self.peak_rss = max(self.peak_rss, rss)
            if rss > self.max_rss:
                log.info("the browser holds %d MiB: restarted", rss >> 20)
                self._restart = True
        if self.conn is None or self.conn.closed:
            self._restart = True
            return tab
        if tab.crashed.is_set():
            await tab.close()
            try:
                return await Tab.open(self.conn, self.limits)
            except CDPError:
                self._restart = True
        return tab

    async def _restarted(self) -> None:
        async with self._idle:
            if not self._restart:
                return
            self.restarts += 1
            await self.close()
            await self.start()
            self._restart = False
            self._idle.notify_all()


__all__ = ["Browser", "PageCapture", "PageFailed", "PageLimits", "default_tabs"]
