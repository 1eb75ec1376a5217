"""Per-host pacing: consecutive requests to one host start at least ``delay`` seconds apart,
however many workers share the host (``--delay``)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit


class Pacer:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._next: dict[str, float] = {}

    async def wait(self, url: str) -> None:
        """Sleep until this host may be asked again, and book the slot after it."""
        if self.delay <= 0:
            return
        host = urlsplit(url).netloc
        now = asyncio.get_running_loop().time()
        at = max(now, self._next.get(host, 0.0))
        self._next[host] = at + self.delay
        if at > now:
            await asyncio.sleep(at - now)
