"""The one HTTP seam of the harvester: every resource is fetched through a :class:`Fetcher`.

A fetch is bounded in every direction a hostile or broken server can push:

- **time**: a connect timeout, a per-read timeout, an overall deadline per response (counted
  from the request, so it includes waiting for a pooled connection) and a minimum average
  body transfer rate after a grace period;
- **size**: the body is cut at ``max_size`` bytes; response headers are limited in count,
  per-field size and total size (aiohttp's parser enforces the first two while parsing);
- **hops**: redirects are followed by hand, one recorded hop at a time, up to a limit, and a
  loop ends the fetch (the rules are :mod:`harvester.redirects`').

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

**Retries** (:mod:`harvester.retries`). HTTP 429 and 5xx, connection failures and timeouts
before the headers are tried again up to ``retries`` times, with exponential back-off and
jitter, honouring ``Retry-After`` (RFC 9110 §10.2.3) in both of its forms. A server asking for
a longer pause than ``backoff_max`` ends the retries at once; the error carries its
``retry_after`` so the caller can come back later. Other 4xx answers are results, not
errors: the caller records 404 and 410. A malformed response (too many or too large headers, a
bad status line) is a :class:`PermanentFetchError`.

**robots.txt** (RFC 9309) is obeyed through a :class:`~harvester.robots.RobotsCache`, read
once per scheme, host and port: a real ``Disallow`` is a :class:`PermanentFetchError`; a
robots.txt that cannot be read for now (5xx, 429, a network error) disallows everything for a
short while, which :meth:`Fetcher.fetch` reports as a :class:`TransientFetchError`.

No cookies are kept (each request stands alone, so captures do not depend on crawl order).

Every limit is a field of :class:`~harvester.settings.HarvestSettings`;
:func:`~harvester.limits.fetch_settings` picks the fetcher's out of them.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from types import TracebackType
from typing import cast

import aiohttp

from harvester.clock import Clock, utcnow
from harvester.exceptions import PermanentFetchError, TransientFetchError
from harvester.exchange import HttpExchange, Redirect, protocol
from harvester.limits import FetchSettings, fetch_settings
from harvester.redirects import check_hop, method_after, redirect_target
from harvester.retries import backoff_delay, transient_error
from harvester.robots import RobotsCache
from harvester.settings import defaults

__all__ = [
    "TRUNCATED_DISCONNECT",
    "TRUNCATED_LENGTH",
    "TRUNCATED_TIME",
    "Fetcher",
]

log = logging.getLogger(__name__)

TRUNCATED_LENGTH = "length"
TRUNCATED_TIME = "time"
TRUNCATED_DISCONNECT = "disconnect"

ROBOTS_REDIRECTS = 5  # RFC 9309 §2.3.1.2: follow at least five

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class _Policy:
    """The limits of one logical fetch: a resource, or a robots.txt."""

    max_size: int
    retries: int
    max_redirects: int
    obey_robots: bool


class _Response(aiohttp.ClientResponse):
    """Remembers the peer address, which aiohttp forgets once the connection is released."""

    peer_ip: str | None = None

    async def start(self, connection: aiohttp.connector.Connection) -> aiohttp.ClientResponse:
        transport = connection.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        self.peer_ip = str(peer[0]) if peer else None
        return await super().start(connection)


class Fetcher:
    """Fetches resources over one pooled keep-alive session, within :class:`FetchSettings`
    (the defaults' when none are given)."""

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
        self._session: aiohttp.ClientSession | None = None
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
        if self._session is not None:
            return
        s = self.settings
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=s.total_connections, limit_per_host=s.per_host),
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=s.connect_timeout, sock_read=s.read_timeout
            ),
            headers={"User-Agent": s.user_agent, "Accept": "*/*", "Accept-Encoding": "identity"},
            cookie_jar=aiohttp.DummyCookieJar(),
            response_class=_Response,
            auto_decompress=False,
            max_line_size=s.max_header_size,
            max_field_size=s.max_header_size,
            max_headers=s.max_header_count,
        )

    async def close(self) -> None:
        """Close every pooled connection."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> Fetcher:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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
            raise TransientFetchError(f"robots.txt unreachable for {url}", max(0.0, wait))
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
        retry_after = result.header("Retry-After")
        return transient_error(result.status, result.reason, result.url, retry_after, self._clock())

    async def _attempt(
        self, method: str, url: str, headers: dict[str, str], max_size: int
    ) -> HttpExchange:
        loop = asyncio.get_running_loop()
        started, start = self._clock(), loop.time()
        deadline_at = start + self.settings.deadline
        response = await self._send(method, url, headers, deadline_at)
        to_headers = loop.time() - start
        complete = False
        try:
            self._check_header_size(response, url)
            body, truncated = await self._read_body(response, max_size, deadline_at)
            complete = truncated is None
        finally:
            if complete:
                response.release()
            else:
                response.close()  # drop the connection: it may still carry unread bytes
        if truncated in (TRUNCATED_TIME, TRUNCATED_DISCONNECT) and not body:
            raise TransientFetchError(f"body of {url} cut ({truncated}) before its first byte")
        timing = (loop.time() - start, to_headers)
        return _result(url, response, body, truncated, started, timing)

    async def _send(
        self, method: str, url: str, headers: dict[str, str], deadline_at: float
    ) -> _Response:
        session = self._require_session()
        try:
            async with asyncio.timeout_at(deadline_at):
                response = await session.request(
                    method, url, headers=headers, allow_redirects=False
                )
        except TimeoutError as exc:
            raise TransientFetchError(f"no response headers from {url} in time") from exc
        except (aiohttp.InvalidURL, ValueError) as exc:
            raise PermanentFetchError(f"cannot fetch {url!r}: {exc}") from exc
        except aiohttp.ClientResponseError as exc:  # the parser refused the status or headers
            raise PermanentFetchError(f"malformed response from {url}: {exc.message}") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise TransientFetchError(f"{type(exc).__name__} fetching {url}: {exc}") from exc
        return cast(_Response, response)

    def _require_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("Fetcher is not open; call open() or use 'async with'")
        return self._session

    def _check_header_size(self, response: aiohttp.ClientResponse, url: str) -> None:
        size = sum(len(name) + len(value) + 4 for name, value in response.raw_headers)
        if size > self.settings.max_header_size:
            limit = self.settings.max_header_size
            message = f"response headers from {url} exceed {limit} bytes"
            raise PermanentFetchError(message, response.status)

    async def _read_body(
        self, response: aiohttp.ClientResponse, max_size: int, deadline_at: float
    ) -> tuple[bytes, str | None]:
        chunks: list[bytes] = []
        size = 0
        stream = response.content
        start = asyncio.get_running_loop().time()
        while True:
            try:
                if stream.is_eof():  # the rest is here (most small bodies): no timer needed
                    chunk = stream.read_nowait()
                else:
                    chunk = await self._read_some(stream, start, size, deadline_at)
            except TimeoutError:
                return b"".join(chunks), TRUNCATED_TIME
            except (aiohttp.ClientError, OSError):
                return b"".join(chunks), TRUNCATED_DISCONNECT
            if not chunk:
                return b"".join(chunks), None
            chunks.append(chunk)
            size += len(chunk)
            if size > max_size:
                return b"".join(chunks)[:max_size], TRUNCATED_LENGTH

    async def _read_some(
        self, stream: aiohttp.StreamReader, start: float, size: int, deadline_at: float
    ) -> bytes:
        """The next bytes of ``stream``; TimeoutError once the deadline, stall or rate limit
        is hit first."""
        timeout = self._read_timeout(start, size, deadline_at)
        if timeout <= 0:
            raise TimeoutError
        async with asyncio.timeout(timeout):  # no task per read, as wait_for makes
            return await stream.readany()

    def _read_timeout(self, start: float, size: int, deadline_at: float) -> float:
        """Seconds the next read may take before the deadline, stall or rate limit is hit."""
        s = self.settings
        now = asyncio.get_running_loop().time()
        limit = min(deadline_at, now + s.read_timeout)
        if s.min_rate > 0:
            # the average falls below min_rate once size / (t - start) < min_rate
            limit = min(limit, start + max(s.rate_grace, size / s.min_rate))
        return limit - now


def _result(
    url: str,
    response: aiohttp.ClientResponse,
    body: bytes,
    truncated: str | None,
    started: datetime,
    timing: tuple[float, float],
) -> HttpExchange:
    # latin-1 maps bytes 1:1, so a writer can re-encode the headers exactly as received
    raw = tuple((n.decode("latin-1"), v.decode("latin-1")) for n, v in response.raw_headers)
    version = response.version
    return HttpExchange(
        url=url,  # as the caller spelt it: the key it looks captures up by
        method=response.method,
        protocol=protocol(version.major, version.minor) if version else "HTTP/1.1",
        status=response.status,
        reason=response.reason or "",
        request_headers=tuple(response.request_info.headers.items()),
        response_headers=raw,
        body=body,
        truncated=truncated,
        peer_ip=cast(_Response, response).peer_ip,
        started=started,
        elapsed=timing[0],
        latency=timing[1],
    )
