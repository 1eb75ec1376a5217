"""The fetcher's HTTP/1.1 transport (:class:`~harvester.http.fetch.Fetcher`): kept-alive
connections (:mod:`harvester.http.connection`), at most ``per_host`` requests in flight to one
origin (scheme, host, port) and ``total_connections`` in all, a new connection within
``connect_timeout``, the wait for a free one counted in the request's deadline.

Credentials in a URL (``http://user:password@host/``) are sent as Basic authorization, as
aiohttp and wget send them. Idle connections are kept :data:`KEEPALIVE_S` seconds, at most
``total_connections`` of them (the oldest is closed first). A kept-alive connection that the
server closed meanwhile fails before any byte of its answer; that request is sent once more
on a new connection. Requests are spelt as aiohttp spelt them: the URL as yarl quotes it,
``Host`` first, then the pool's fields, then the request's. No cookies, no proxies (the
environment's are not read), no content decoding: the body is stored as sent.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections import OrderedDict
from collections.abc import Mapping

from harvester.exceptions import NothingReceived, PermanentFetchError, TransientFetchError
from harvester.http.connection import Connection, Origin, Reply, WireRequest
from harvester.http.limits import FetchSettings
from harvester.http.requesturl import request_url

__all__ = ["KEEPALIVE_S", "ConnectionPool"]

KEEPALIVE_S = 15.0  # as aiohttp's and nginx's default keep-alive


class ConnectionPool:
    """Kept-alive connections, ``per_host`` at most in use to a host, ``total_connections``
    in all; every request carries ``headers`` before its own."""

    def __init__(self, settings: FetchSettings, headers: Mapping[str, str]) -> None:
        self.settings = settings
        for name, value in headers.items():
            _check_field("", name, value)
        self._headers = tuple(headers.items())
        self._all = asyncio.Semaphore(settings.total_connections)
        self._hosts: dict[Origin, asyncio.Semaphore] = {}
        self._idle: OrderedDict[Connection, tuple[Origin, float]] = OrderedDict()
        self._by_origin: dict[Origin, list[Connection]] = {}
        self._tls: ssl.SSLContext | None = None

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], max_size: int, deadline_at: float
    ) -> Reply:
        """``method url`` with ``headers`` sent; the reply, or Permanent/TransientFetchError."""
        request = self._request(method, url, headers)
        host = self._hosts.get(request.origin)
        if host is None:
            host = self._hosts[request.origin] = asyncio.Semaphore(self.settings.per_host)
        await self._acquire(host, url, deadline_at)
        try:
            await self._acquire(self._all, url, deadline_at)
            try:
                return await self._exchange(request, max_size, deadline_at)
            finally:
                self._all.release()
        finally:
            host.release()

    def close(self) -> None:
        """Close every idle connection (those in use close with their exchange)."""
        for conn in self._idle:
            conn.drop()
        self._idle.clear()
        self._by_origin.clear()

    async def _exchange(self, request: WireRequest, max_size: int, deadline_at: float) -> Reply:
        conn = self._take(request.origin) or await self._connect(request, deadline_at)
        try:
            try:
                reply = await conn.send(request, max_size, deadline_at)
            except NothingReceived:
                if not conn.reused:
                    raise
                conn = await self._connect(request, deadline_at)
                reply = await conn.send(request, max_size, deadline_at)
        except asyncio.CancelledError:
            conn.drop()
            raise
        self._put(request.origin, conn)
        return reply

    def _take(self, origin: Origin) -> Connection | None:
        idle = self._by_origin.get(origin)
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            _, since = self._idle.pop(conn)
            if conn.reusable() and now - since < KEEPALIVE_S:
                conn.reused = True
                return conn
            conn.drop()
        return None

    def _put(self, origin: Origin, conn: Connection) -> None:
        if not conn.reusable():
            return
        if len(self._idle) >= self.settings.total_connections:
            oldest, (old_origin, _) = self._idle.popitem(last=False)
            self._by_origin[old_origin].remove(oldest)
            oldest.drop()
        self._idle[conn] = (origin, asyncio.get_running_loop().time())
        self._by_origin.setdefault(origin, []).append(conn)

    async def _connect(self, request: WireRequest, deadline_at: float) -> Connection:
        scheme, host, port = request.origin
        loop = asyncio.get_running_loop()
        tls = self._context() if scheme == "https" else None
        timeout = min(self.settings.connect_timeout, deadline_at - loop.time())
        try:
            async with asyncio.timeout(max(timeout, 0.0)):
                _, conn = await loop.create_connection(
                    lambda: Connection(self.settings),
                    host,
                    port,
                    ssl=tls,
                    server_hostname=host if tls else None,
                )
        except TimeoutError as exc:
            raise TransientFetchError(f"no connection to {request.url} in time") from exc
        except (OSError, ssl.SSLError, ssl.CertificateError) as exc:
            name = type(exc).__name__
            raise TransientFetchError(f"{name} fetching {request.url}: {exc}") from exc
        return conn

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def _acquire(self, semaphore: asyncio.Semaphore, url: str, deadline_at: float) -> None:
        if not semaphore.locked():
            await semaphore.acquire()
            return
        try:
            async with asyncio.timeout_at(deadline_at):
                await semaphore.acquire()
        except TimeoutError as exc:
            raise TransientFetchError(f"no response headers from {url} in time") from exc

    def _request(self, method: str, url: str, headers: Mapping[str, str]) -> WireRequest:
        """The request's bytes, as yarl spells its URL (as aiohttp sent it)."""
        try:
            where = request_url(url)
        except ValueError as exc:
            raise PermanentFetchError(f"cannot fetch {url!r}: {exc}") from exc
        for name, value in headers.items():  # the pool's own were checked once
            _check_field(url, name, value)
        own = tuple(headers.items())
        if where.credentials is not None:  # sent as aiohttp and wget send them
            pair = ":".join(where.credentials).encode()
            own = (("Authorization", "Basic " + base64.b64encode(pair).decode("ascii")), *own)
        sent = (("Host", where.host_field), *self._headers, *own)
        lines = [f"{name}: {value}\r\n" for name, value in sent]
        text = f"{method} {where.target} HTTP/1.1\r\n{''.join(lines)}\r\n"
        try:
            head = text.encode("latin-1")  # header values came in as latin-1: the same bytes
        except UnicodeEncodeError:
            head = text.encode("utf-8")
        origin = (where.scheme, where.host, where.port)
        return WireRequest(method, url, origin, head, where.target, sent)


def _check_field(url: str, name: str, value: str) -> None:
    """A request header field must not break its line: that would inject fields."""
    if any(c in name or c in value for c in "\r\n\0"):
        raise PermanentFetchError(f"cannot fetch {url!r}: header {name} holds a line break")
