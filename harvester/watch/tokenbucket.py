"""The watch's fetch budget: a token bucket of ``rate`` tokens a second (``--rate``).

Every request a watch makes (a revisit, a first fetch, a poll of a source) takes one token;
the bucket holds at most ``burst`` of them, so after a pause the watch never sends more than
``burst`` requests at once. Per-host politeness (``politeness.py``) applies on top.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(
        self, rate: float, burst: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = burst
        self._at = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def wait_time(self) -> float:
        """Seconds until a token is free (0 when one is)."""
        self._refill()
        return max(0.0, (1 - self._tokens) / self.rate)

    async def take(self) -> None:
        """Wait for a token and take it; callers are served in turn."""
        async with self._lock:
            while (wait := self.wait_time()) > 0:
                await asyncio.sleep(wait)
            self._tokens -= 1
