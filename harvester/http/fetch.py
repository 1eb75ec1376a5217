"""The one HTTP seam of the harvester: every resource is fetched through a :class:`Fetcher`.

A fetch is bounded in every direction a hostile or broken server can push:

- **time**: a connect timeout, a per-read timeout, an overall deadline per response (counted
  from the request, so it includes waiting for a pooled connection) and a minimum average
  body transfer rate after a grace period;
- **size**: the body is cut at ``max_size`` bytes; response headers are limited in count,
  per-field size and total size (the connection enforces the first two while parsing,
  :mod:`harvester.http.connection`);
- **hops**: redirects are followed by hand, one recorded hop at a time, up to a limit, and a
  loop ends the fetch (the rules are :mod:`harvester.http.redirects`').

A cut body is kept and marked with the reason WARC 1.1 names for its ``WARC-Truncated`` field:
``"length"`` (``max_size`` reached), ``"time"`` (deadline, stall or rate below ``min_rate``)
or ``"disconnect"`` (the server closed or reset mid-body, e.g. a lying Content-Length). A cut
before the first body byte raises :class:`TransientFetchError` instead.

**Payload fidelity.** Requests say ``Accept-Encoding: identity`` and the session never
decompresses, so ``HttpExchange.body`` is the entity body exactly as sent, with the transfer
coding (chunked) removed and any content coding kept. A server that sends gzip anyway gets its
compressed bytes stored, bounded by ``max_size``; nothing is inflated here, so a decompression
bomb costs no more than its compressed size. A WARC writer must drop ``Transfer-Encoding``
from the stored headers, since the body it gets is already de-chunked.

**Retries** (:mod:`harvester.http.retries`). HTTP 429 and 5xx, connection failures and timeouts
before the headers are tried again up to ``retries`` times, with exponential back-off and
jitter, honouring ``Retry-After`` (RFC 9110 §10.2.3) in both of its forms. A server asking for
a longer pause than ``backoff_max`` ends the retries at once; the error carries its
``retry_after`` so the caller can come back later. Other 4xx answers are results, not
errors: the caller records 404 and 410. A malformed response (too many or too large headers, a
bad status line) is a :class:`PermanentFetchError`.

**robots.txt** (RFC 9309) is obeyed through a :class:`~harvester.http.robots.RobotsCache`, read
once per scheme, host and port: a real ``Disallow`` is a :class:`PermanentFetchError`; a
robots.txt that cannot be read for now (5xx, 429, a network error) disallows everything for a
short while, which :meth:`Fetcher.fetch` reports as a :class:`TransientFetchError`.

No cookies are kept (each request stands alone, so captures do not depend on crawl order).

Every limit is a field of :class:`~harvester.settings.HarvestSettings`;
:func:`~harvester.http.limits.fetch_settings` picks the fetcher's out of them.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from harvester.clock import Clock, utcnow
from harvester.exceptions import PermanentFetchError, RobotsUnreachable, TransientFetchError
from harvester.http.connection import (
    TRUNCATED_DISCONNECT,
    TRUNCATED_LENGTH,
    TRUNCATED_TIME,
    Reply,
)
from harvester.http.connectionpool import ConnectionPool
from harvester.http.exchange import HttpExchange, Redirect, protocol
from harvester.http.limits import FetchSettings, fetch_settings
from harvester.http.redirects import check_hop, method_after, redirect_target
from harvester.http.retries import backoff_delay, transient_error
from harvester.http.robots import RobotsCache
from harvester.settings import defaults

__all__ = [
    "TRUNCATED_DISCONNECT",
    "TRUNCATED_LENGTH",
    "TRUNCATED_TIME",
    "Fetcher",
]

log = logging.getLogger(__name__)

ROBOTS_REDIRECTS = 5  # RFC 9309 §2.3.1.2: follow at least five

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class _Policy:
    """The limits of one logical fetch: a resource, or a robots.txt."""

    max_size: int
    retries: int
    max_redirects: int
    obey_robots: bool


class Fetcher:
    """Fetches resources over kept-alive connections (:mod:`harvester.http.connectionpool`),
    within :class:`FetchSettings` (the defaults' when none are given)."""

    def __init__(
        self,
        settings: FetchSettings | None = None,
        *,
        clock: Clock = utcnow,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings or fetch_settings(defaults())
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._pool: ConnectionPool | None = None
        s = self.settings
        self._resource_policy = _Policy(s.max_size, s.retries, s.max_redirects, s.obey_robots)
        self._robots_policy = _Policy(s.robots_max_size, 0, ROBOTS_REDIRECTS, False)
        self.robots = RobotsCache(
            self._load_robots,
            token=s.robots_token,
            ttl=s.robots_ttl,
            error_ttl=s.robots_error_ttl,
            clock=clock,
        )

    async def open(self) -> None:
        """Create the connection pool; must run inside the event loop that will fetch."""
        if self._pool is None:
            s = self.settings
            headers = {"User-Agent": s.user_agent, "Accept": "*/*", "Accept-Encoding": "identity"}
            self._pool = ConnectionPool(s, headers)

    async def close(self) -> None:
        """Close every pooled connection."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    async def __aenter__(self) -> Fetcher:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        follow_redirects: bool = True,
    ) -> HttpExchange:
        """Fetch ``url``; 2xx, 3xx (when not followed), 304 and 4xx other than 429 are results.

        Raises :class:`PermanentFetchError` for robots.txt refusals, redirect loops, too many
        redirects and malformed responses, and :class:`TransientFetchError` once retries of
        429, 5xx, timeouts and connection failures are spent.
        """
        if not url.startswith(("http://", "https://")):
            raise PermanentFetchError(f"not an absolute http(s) URL: {url[:200]!r}")
        request_headers = dict(headers or {})
        policy = self._resource_policy
        return await self._follow(url, method, request_headers, follow_redirects, policy)

    async def fetch_page(self, url: str, headers: Mapping[str, str]) -> HttpExchange:
        """A crawl's page, its redirect not followed: the crawl queues the target as a page."""
        return await self.fetch(url, headers=headers, follow_redirects=False)

    async def _load_robots(self, url: str) -> HttpExchange:
        return await self._follow(url, "GET", {}, True, self._robots_policy)

    async def _follow(
        self, url: str, method: str, headers: dict[str, str], follow: bool, policy: _Policy
    ) -> HttpExchange:
        redirects: list[Redirect] = []
        current = url
        while True:
            if policy.obey_robots:
                await self._check_robots(current)
            result = await self._with_retries(method, current, headers, policy)
            location = redirect_target(result) if follow else None
            if location is None:
                return replace(result, redirects=tuple(redirects)) if redirects else result
            redirects.append((result.url, result.status, location))
            check_hop(url, redirects, policy.max_redirects)
            log.debug("redirect %s -> %s (%d)", current, location, result.status)
            method = method_after(result.status, method)
            current = location

    async def _check_robots(self, url: str) -> None:
        rules = await self.robots.rules(url)
        if rules.allows(url, self.robots.token):
            return
        if rules.unreachable:
            wait = (rules.expires - self._clock()).total_seconds()
            raise RobotsUnreachable(f"robots.txt unreachable for {url}", max(0.0, wait))
        raise PermanentFetchError(f"disallowed by robots.txt: {url}")

    async def _with_retries(
        self, method: str, url: str, headers: dict[str, str], policy: _Policy
    ) -> HttpExchange:
        attempt = 0
        while True:
            try:
                result = await self._attempt(method, url, headers, policy.max_size)
                error = self._transient(result)
                if error is None:
                    return result
            except TransientFetchError as exc:
                error = exc
            delay = self._retry_delay(attempt, error, policy)
            if delay is None:
                raise error
            log.info("retrying %s in %.2fs after: %s", url, delay, error)
            await self._sleep(delay)
            attempt += 1

    def _retry_delay(
        self, attempt: int, error: TransientFetchError, policy: _Policy
    ) -> float | None:
        if attempt >= policy.retries:
            return None
        s = self.settings
        return backoff_delay(
            attempt, error.retry_after, base=s.backoff_base, cap=s.backoff_max, rng=self._rng
        )

    def _transient(self, result: HttpExchange) -> TransientFetchError | None:
        if result.status != 429 and result.status < 500:  # most: no Retry-After to read
            return None
        retry_after = result.header("Retry-After")
        return transient_error(result.status, result.reason, result.url, retry_after, self._clock())

    async def _attempt(
        self, method: str, url: str, headers: dict[str, str], max_size: int
    ) -> HttpExchange:
        if self._pool is None:
            raise RuntimeError("Fetcher is not open; call open() or use 'async with'")
        loop = asyncio.get_running_loop()
        started, start = self._clock(), loop.time()
        deadline_at = start + self.settings.deadline
        reply = await self._pool.request(method, url, headers, max_size, deadline_at)
        self._check_header_size(reply, url)
        if reply.truncated in (TRUNCATED_TIME, TRUNCATED_DISCONNECT) and not reply.body:
            cut = reply.truncated
            raise TransientFetchError(f"body of {url} cut ({cut}) before its first byte")
        return _result(url, method, reply, started, loop.time() - start)

    def _check_header_size(self, reply: Reply, url: str) -> None:
        if reply.head_size > self.settings.max_header_size:
            limit = self.settings.max_header_size
            message = f"response headers from {url} exceed {limit} bytes"
            raise PermanentFetchError(message, reply.status)


def _result(url: str, method: str, reply: Reply, started: datetime, elapsed: float) -> HttpExchange:
    # latin-1 maps bytes 1:1, so a writer can re-encode the headers exactly as received
    raw = tuple((n.decode("latin-1"), v.decode("latin-1")) for n, v in reply.headers)
    return HttpExchange(
        url=url,  # as the caller spelt it: the key it looks captures up by
        method=method,
        protocol=protocol(1, 0) if reply.version == "1.0" else protocol(1, 1),
        status=reply.status,
        reason=reply.reason,
        request_headers=reply.sent,
        sent_target=reply.target,
        response_headers=raw,
        body=reply.body,
        truncated=reply.truncated,
        peer_ip=reply.peer_ip,
        started=started,
        elapsed=elapsed,
        latency=reply.latency,
    )
