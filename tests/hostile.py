"""Servers that test the fetcher: a stateful WSGI site and raw-socket misbehaviour.

``site(...)`` is a WSGI application for ``tests.servers.start_wsgi``: robots.txt, redirects,
conditional GET, flaky 503s and request counters that tests read back over HTTP.

``RawServer`` runs one scripted coroutine per connection on 127.0.0.1, port 0, inside the
test's own event loop, for what a WSGI server cannot do: trickle bytes, send headers without
end, lie about Content-Length, reset mid-body. Every script is bounded in bytes and in time.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

HOST = "127.0.0.1"
HELLO = b"hello, archive\n"
ETAG = '"v1"'
# 8 MiB of zeros: gzip makes it about 8 KiB, a small decompression bomb
GZIP_BODY = gzip.compress(bytes(8 * 1024 * 1024), mtime=0)


# --- the WSGI site -------------------------------------------------------------------------


def site(robots: str = "", robots_status: int = 200) -> WSGIApp:
    """A small site whose robots.txt answers ``robots_status`` with ``robots`` as its body."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        with lock:
            counts[path] += 1
            seen = counts[path]
        if path == "/count":
            query = parse_qs(environ.get("QUERY_STRING", ""))
            with lock:
                return _send(start_response, "200 OK", str(counts[query["path"][0]]).encode())
        if path == "/robots.txt":
            status = f"{robots_status} Robots"
            return _send(start_response, status, robots.encode())
        body = _route(environ, start_response, path, seen)
        return [b""] if environ["REQUEST_METHOD"] == "HEAD" else body  # headers only for HEAD

    return app


def _route(
    environ: dict[str, Any], start_response: StartResponse, path: str, seen: int
) -> Iterable[bytes]:
    parts = path.strip("/").split("/")
    query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
    if parts[0] in ("hello", "private"):
        return _hello(environ, start_response)
    if parts[0] == "redirect":
        hops = int(parts[1])
        target = "/hello" if hops == 0 else f"/redirect/{hops - 1}"
        return _send(start_response, "302 Found", b"", [("Location", target)])
    if parts[0] == "loop":
        target = "/loop/b" if parts[1] == "a" else "/loop/a"
        return _send(start_response, "301 Moved", b"", [("Location", target)])
    if parts[0] == "flaky":  # /flaky/<key>?fails=N&retry_after=V
        if seen <= int(query.get("fails", "1000000")):
            extra = [("Retry-After", query["retry_after"])] if "retry_after" in query else []
            return _send(start_response, "503 Busy", b"busy", extra)
        return _send(start_response, "200 OK", b"finally")
    if parts[0] == "big":
        return _send(start_response, "200 OK", bytes(int(parts[1])))
    if parts[0] == "gzip":  # ignores Accept-Encoding: identity
        return _send(start_response, "200 OK", GZIP_BODY, [("Content-Encoding", "gzip")])
    if parts[0] == "gone":
        return _send(start_response, "410 Gone", b"gone")
    return _send(start_response, "404 Not Found", b"no such page")


def _hello(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    headers = [
        ("ETag", ETAG),
        ("X-Client-Port", str(environ.get("REMOTE_PORT", ""))),
        ("X-Dup", "first"),
        ("X-Dup", "second"),
        ("X-Seen-User-Agent", environ.get("HTTP_USER_AGENT", "")),
        ("X-Seen-Accept-Encoding", environ.get("HTTP_ACCEPT_ENCODING", "")),
    ]
    if environ.get("HTTP_IF_NONE_MATCH") == ETAG:
        start_response("304 Not Modified", headers)
        return [b""]
    return _send(start_response, "200 OK", HELLO, headers)


def _send(
    start_response: StartResponse,
    status: str,
    body: bytes,
    headers: list[tuple[str, str]] | None = None,
) -> Iterable[bytes]:
    base = [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
    start_response(status, base + (headers or []))
    return [body]


# --- raw-socket misbehaviour ---------------------------------------------------------------


class RawServer:
    """An asyncio TCP server on loopback that runs ``handler`` for each connection."""

    def __init__(self, handler: Handler, *, time_limit: float = 10.0) -> None:
        self._handler = handler
        self._time_limit = time_limit
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self.connections = 0
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        try:
            async with asyncio.timeout(self._time_limit):
                await self._handler(reader, writer)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def read_head(reader: asyncio.StreamReader) -> bytes:
    """The request line and headers (the stream's 64 KiB limit bounds them)."""
    return await reader.readuntil(b"\r\n\r\n")


async def _flushed(writer: asyncio.StreamWriter) -> bool:
    """Drain and yield to the loop (the client may share it); False once the peer is gone."""
    await writer.drain()
    await asyncio.sleep(0)
    return not writer.is_closing()


def head(status: str = "200 OK", *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers, "", ""]
    return "\r\n".join(lines).encode("latin-1")


def trickle(body: bytes, interval: float, step: int = 1) -> Handler:
    """Headers at once, then ``step`` body bytes every ``interval`` seconds."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("200 OK", f"Content-Length: {len(body)}"))
        for i in range(0, len(body), step):
            writer.write(body[i : i + step])
            await writer.drain()
            await asyncio.sleep(interval)

    return handler


def silent(seconds: float) -> Handler:
    """Reads the request, then says nothing for ``seconds``."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        await asyncio.sleep(seconds)

    return handler


def keep_alive(max_requests: int = 10) -> Handler:
    """Answers up to ``max_requests`` requests on one connection, each with the client's port."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = str(writer.get_extra_info("peername")[1])
        for _ in range(max_requests):
            await read_head(reader)
            writer.write(head("200 OK", "Content-Length: 2", f"X-Client-Port: {port}") + b"ok")
            await writer.drain()

    return handler


def stall_after_headers(seconds: float) -> Handler:
    """Promises a body, then sends nothing for ``seconds``."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("200 OK", "Content-Length: 10"))
        await writer.drain()
        await asyncio.sleep(seconds)

    return handler


def endless_headers(sent: list[int], max_headers: int = 1_000_000) -> Handler:
    """A status line, then up to ``max_headers`` header lines; ``sent`` gets the count."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("200 OK")[:-2])  # no blank line: the headers never end
        count = 0
        try:
            for count in range(1, max_headers + 1):
                writer.write(b"X-Again-%d: and again\r\n" % count)
                if (count % 100 == 0 or writer.is_closing()) and not await _flushed(writer):
                    break
        finally:
            sent.append(count)

    return handler


def endless_header_line(sent: list[int], max_bytes: int = 64 * 1024 * 1024) -> Handler:
    """One header whose value never ends (up to ``max_bytes``); ``sent`` gets the bytes sent."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("200 OK")[:-2] + b"X-Long: ")
        total = 0
        try:
            while total < max_bytes:
                writer.write(b"a" * 4096)
                total += 4096
                if not await _flushed(writer):
                    break
        finally:
            sent.append(total)

    return handler


def lying_length(declared: int, sent: bytes, *, reset: bool = False) -> Handler:
    """Declares ``declared`` bytes, sends ``sent``, then closes (or resets with RST)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("200 OK", f"Content-Length: {declared}") + sent)
        await writer.drain()
        await asyncio.sleep(0.05)
        if reset:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()

    return handler


def fat_headers(count: int, size: int) -> Handler:
    """A complete response whose ``count`` headers are each ``size`` bytes long."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        fat = [f"X-Fat-{i}: {'f' * size}" for i in range(count)]
        writer.write(head("200 OK", "Content-Length: 2", *fat) + b"ok")
        await writer.drain()
        await asyncio.sleep(1.0)

    return handler
