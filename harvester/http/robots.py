"""robots.txt (RFC 9309): one origin's rules, and the cache that loads them once per origin.

robots.txt is read once per scheme, host and port (:func:`robots_url`) and cached until it
expires. A 4xx answer allows everything; a 5xx answer, 429 or a network error disallows
everything for a short while (§2.3.1.4), marked ``unreachable`` so the fetcher can report it as
a :class:`~harvester.exceptions.TransientFetchError` rather than a real ``Disallow``. Rules are
matched against the product token of the user agent (§2.2.1). Crawl-delay and Sitemap lines
are reported, not enforced: pacing belongs to the scheduler.

The cache fetches nothing itself: it is given a ``load`` coroutine (the fetcher's, with its own
size and redirect limits for robots.txt), so it can be tested with a fake.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from protego import Protego
from yarl import URL

from harvester.clock import Clock, utcnow
from harvester.exceptions import PermanentFetchError, TransientFetchError
from harvester.http.exchange import HttpExchange
from harvester.http.requesturl import origin_prefix

log = logging.getLogger(__name__)


def robots_url(url: str) -> str:
    """The robots.txt governing ``url``: same scheme, host and port.

    >>> robots_url("https://User@Example.org:8443/a/b?c=d#e")
    'https://example.org:8443/robots.txt'
    """
    return _origin_robots_url(origin_prefix(url))  # made once per origin


@functools.lru_cache(maxsize=1024)
def _origin_robots_url(url: str) -> str:
    return str(URL(url).origin().with_path("/robots.txt"))


@dataclass(frozen=True)
class RobotsRules:
    """One origin's robots.txt, or the blanket verdict standing in for it."""

    parser: Protego | None
    allow_all: bool
    expires: datetime
    unreachable: bool = False

    def allows(self, url: str, token: str) -> bool:
        return self.allow_all if self.parser is None else self.parser.can_fetch(url, token)

    def crawl_delay(self, token: str) -> float | None:
        return None if self.parser is None else self.parser.crawl_delay(token)

    def sitemaps(self) -> list[str]:
        return [] if self.parser is None else list(self.parser.sitemaps)


class RobotsCache:
    """robots.txt per scheme, host and port, loaded once at a time and kept until it expires."""

    def __init__(
        self,
        load: Callable[[str], Awaitable[HttpExchange]],
        *,
        token: str,
        ttl: float,
        error_ttl: float,
        clock: Clock = utcnow,
    ) -> None:
        self._load = load
        self.token = token
        self._ttl = timedelta(seconds=ttl)
        self._error_ttl = timedelta(seconds=error_ttl)
        self._clock = clock
        self._rules: dict[str, RobotsRules] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._warned: set[str] = set()  # robots.txt URLs unreachable since their warning

    async def rules(self, url: str) -> RobotsRules:
        """The rules for ``url``'s origin, fetching robots.txt if none are fresh."""
        key = robots_url(url)
        cached = self._rules.get(key)
        if cached is not None and cached.expires > self._clock():
            return cached  # the usual case: no lock to take
        async with self._locks.setdefault(key, asyncio.Lock()):
            cached = self._rules.get(key)
            if cached is None or cached.expires <= self._clock():
                cached = self._rules[key] = await self._fetch(key)
            return cached

    async def allowed(self, url: str) -> bool:
        return (await self.rules(url)).allows(url, self.token)

    async def crawl_delay(self, url: str) -> float | None:
        return (await self.rules(url)).crawl_delay(self.token)

    async def sitemaps(self, url: str) -> list[str]:
        return (await self.rules(url)).sitemaps()

    async def _fetch(self, url: str) -> RobotsRules:
        try:
            result = await self._load(url)
        except TransientFetchError as exc:
            self._unreachable(url, str(exc))
            return self._blanket(allow=False)
        except PermanentFetchError as exc:
            log.info("robots.txt %s unusable, allowing all: %s", url, exc)
            return self._blanket(allow=True)
        if 400 <= result.status < 500:
            self._warned.discard(url)
            return self._blanket(allow=True)
        if not 200 <= result.status < 300:
            self._unreachable(url, f"HTTP {result.status} {result.reason}")
            return self._blanket(allow=False)
        self._warned.discard(url)
        parser = Protego.parse(result.body.decode("utf-8", errors="replace"))
        return RobotsRules(parser, allow_all=True, expires=self._clock() + self._ttl)

    def _unreachable(self, url: str, why: str) -> None:
        """Warn once while ``url`` stays unreachable (its host's URLs each fail quietly)."""
        level = logging.DEBUG if url in self._warned else logging.WARNING
        self._warned.add(url)
        log.log(level, "robots.txt %s unreachable, disallowing its host for now: %s", url, why)

    def _blanket(self, *, allow: bool) -> RobotsRules:
        ttl = self._ttl if allow else self._error_ttl
        return RobotsRules(None, allow, self._clock() + ttl, unreachable=not allow)
