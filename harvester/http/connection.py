"""One HTTP/1.1 connection of the fetcher's pool (:mod:`harvester.http.connectionpool`): a request
at a time, its answer read by an asyncio protocol and parsed by ``httptools`` (llhttp, the parser
of Node.js and, vendored, of aiohttp). aiohttp's client cost 0.16-0.22 ms of CPU a response on
the benchmark site where this costs 0.04 (``bench/README.md``, ``### Issue 15, session 10``),
and the fetch was a third of a ``get`` harvest's CPU.

Threat model: the server is hostile, and everything it sends is bounded before it is kept.

- **The head**: no line longer than ``max_header_size`` bytes and no more than
  ``max_header_count`` fields, checked on the bytes as they arrive (the parser would buffer an
  endless line whole); the whole head at most twice ``max_header_size`` (the fetcher checks
  the finished head's exact size).
- **The body**: at most ``max_size`` bytes are kept; the exchange then ends as cut
  (``"length"``) and the connection is dropped.
- **Time**: the head and the body within the request's deadline; no silence longer than
  ``read_timeout``; once the head is in, the body at ``min_rate`` bytes a second on average
  after ``rate_grace`` seconds. One timer per exchange, moved only when it fires.
- **Framing** is llhttp's (Content-Length, chunked). A body with neither ends when the
  connection closes (RFC 9112 §6.3); a close before the framed end is ``"disconnect"``.
- **Leftovers**: bytes after an answer's end, or an answer no request waits for, drop the
  connection, as do an answer to HEAD, a ``101`` and ``Connection: close``. Informational
  (1xx) answers are skipped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httptools

from harvester.exceptions import NothingReceived, PermanentFetchError, TransientFetchError
from harvester.http.exchange import Header
from harvester.http.limits import FetchSettings

__all__ = [
    "TRUNCATED_DISCONNECT",
    "TRUNCATED_LENGTH",
    "TRUNCATED_TIME",
    "Connection",
    "Origin",
    "Reply",
    "WireRequest",
]

# WARC-Truncated reasons (WARC 1.1 §5.13) of a cut body
TRUNCATED_LENGTH = "length"  # max_size reached
TRUNCATED_TIME = "time"  # deadline, stall or rate below min_rate
TRUNCATED_DISCONNECT = "disconnect"  # closed before the framed end

Origin = tuple[str, str, int]  # scheme, host, port


@dataclass(slots=True)
class Reply:
    """One response as received: the head's fields as bytes, in order; the body de-chunked."""

    status: int
    version: str  # "1.1" or "1.0"
    reason: str
    headers: tuple[tuple[bytes, bytes], ...]
    head_size: int  # the fields' bytes, each counted with its ": " and CRLF
    body: bytes
    truncated: str | None  # a TRUNCATED_* reason, or None
    peer_ip: str | None
    target: str  # the request's target as sent
    sent: tuple[Header, ...]  # the request's header fields as sent
    latency: float  # seconds from the request to its head


@dataclass(slots=True)
class WireRequest:
    """A request ready to send: its head's bytes, the target and header fields they hold."""

    method: str
    url: str
    origin: Origin
    head: bytes
    target: str  # the request line's, as sent: yarl's spelling of the URL's path and query
    sent: tuple[Header, ...]


@dataclass(eq=False, slots=True)
class _Exchange:
    """One request's answer as it arrives."""

    request: WireRequest
    max_size: int
    deadline_at: float
    started: float
    future: asyncio.Future[Reply]
    last: float = 0.0  # when bytes last arrived
    head_at: float | None = None  # when the head was complete
    head_bytes: int = 0  # bytes received before the head was complete
    line: int = 0  # bytes of the head's current line so far
    status: int = 0
    reason: bytearray = field(default_factory=bytearray)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    head_size: int = 0
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    until_close: bool = False  # a body framed by the connection's end


class Connection(asyncio.Protocol):
    """One connection: a request at a time, its answer parsed as it arrives."""

    def __init__(self, settings: FetchSettings) -> None:
        self.settings = settings
        self.transport: asyncio.Transport | None = None
        self.peer_ip: str | None = None
        self.closed = False
        self.reused = False
        self._parser = httptools.HttpResponseParser(self)
        self._exchange: _Exchange | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._keep = False

    # -- asyncio --------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer_ip = str(peer[0]) if peer else None

    def data_received(self, data: bytes) -> None:
        ex = self._exchange
        if ex is None:  # nobody asked for these bytes
            self.drop()
            return
        ex.last = asyncio.get_running_loop().time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(PermanentFetchError(f"malformed response from {ex.request.url}: {exc}"))
            return
        if ex.head_at is None and self._exchange is ex:  # all of ``data`` was head
            self._bound_head(ex, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        ex = self._exchange
        if ex is None:
            return
        if ex.head_at is None:
            what = f"{type(exc).__name__}: {exc}" if exc else "the connection closed"
            error = NothingReceived if ex.head_bytes == 0 else TransientFetchError
            self._fail(error(f"no response from {ex.request.url}: {what}"))
        else:
            self._finish(None if ex.until_close else TRUNCATED_DISCONNECT)

    # -- httptools ------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._exchange is None:  # a second answer, or bytes after the first one's end
            self.drop()

    def on_status(self, status: bytes) -> None:
        if self._exchange is not None:
            self._exchange.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        ex = self._exchange
        if ex is None:
            return
        ex.headers.append((name, value))
        size = len(name) + len(value)
        ex.head_size += size + 4
        s = self.settings
        if len(ex.headers) > s.max_header_count:
            problem = f"over {s.max_header_count} header fields"
        elif size > s.max_header_size:
            problem = f"a header field over {s.max_header_size} bytes"
        else:
            return
        self._fail(PermanentFetchError(f"malformed response from {ex.request.url}: {problem}"))

    def on_headers_complete(self) -> None:
        ex = self._exchange
        if ex is None:
            return
        ex.status = self._parser.get_status_code()
        if 100 <= ex.status < 200 and ex.status != 101:  # informational: the answer follows
            ex.reason.clear()
            ex.headers.clear()
            ex.head_size = 0
            return
        ex.head_at = ex.last
        ex.until_close = _until_close(ex.status, ex.headers)
        if ex.request.method == "HEAD" or ex.status == 101:
            self._finish(None)

    def on_body(self, body: bytes) -> None:
        ex = self._exchange
        if ex is None:
            return
        ex.chunks.append(body)
        ex.size += len(body)
        if ex.size > ex.max_size:
            self._finish(TRUNCATED_LENGTH)

    def on_message_complete(self) -> None:
        ex = self._exchange
        if ex is not None and ex.head_at is not None:
            self._finish(None, keep=self._parser.should_keep_alive())

    # -- one exchange ---------------------------------------------------------------------

    def send(
        self, request: WireRequest, max_size: int, deadline_at: float
    ) -> asyncio.Future[Reply]:
        """Send ``request``; the future is its reply, or the error that ended it."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        future: asyncio.Future[Reply] = loop.create_future()
        if self.closed or self.transport is None:  # closed before it was used: no answer
            future.set_exception(NothingReceived(f"no response from {request.url}: closed"))
            return future
        self._exchange = _Exchange(request, max_size, deadline_at, now, future, last=now)
        self._arm(self._exchange)
        self.transport.write(request.head)
        return future

    def reusable(self) -> bool:
        return self._keep and not self.closed

    def drop(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _bound_head(self, ex: _Exchange, data: bytes) -> None:
        """Count ``data`` into the unfinished head, and fail the exchange once the head's
        current line or the whole outgrew the limits: llhttp would keep an endless line."""
        ex.head_bytes += len(data)
        end = data.rfind(b"\n")
        ex.line = ex.line + len(data) if end < 0 else len(data) - end - 1
        limit = self.settings.max_header_size
        url = ex.request.url
        if ex.line > limit:
            self._fail(
                PermanentFetchError(f"malformed response from {url}: a line over {limit} bytes")
            )
        elif ex.head_bytes > 2 * limit:  # the fetcher checks the finished head's exact size
            self._fail(PermanentFetchError(f"response headers from {url} exceed {limit} bytes"))

    def _limit(self, ex: _Exchange) -> float:
        """When the exchange runs out of time, as things stand. Before the head, the rate's
        grace counts from now: the timer then fires no later than the rate's limit will be,
        and no second timer is needed when the head arrives."""
        s = self.settings
        limit = min(ex.deadline_at, ex.last + s.read_timeout)
        if s.min_rate > 0:
            since = ex.last if ex.head_at is None else ex.head_at
            limit = min(limit, since + max(s.rate_grace, ex.size / s.min_rate))
        return limit

    def _arm(self, ex: _Exchange) -> None:
        """The exchange's one timer, set for its limit as things stand."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_at(self._limit(ex), self._check)

    def _check(self) -> None:
        """The timer: the exchange ends if its limit has come, else waits for the new one."""
        ex = self._exchange
        if ex is None:
            return
        if asyncio.get_running_loop().time() < self._limit(ex):
            self._arm(ex)
        elif ex.head_at is None:
            self._fail(TransientFetchError(f"no response headers from {ex.request.url} in time"))
        else:
            self._finish(TRUNCATED_TIME)

    def _finish(self, truncated: str | None, keep: bool = False) -> None:
        ex = self._end()
        if ex is None:
            return
        body = b"".join(ex.chunks)
        if truncated == TRUNCATED_LENGTH:
            body = body[: ex.max_size]
        head_at = ex.head_at if ex.head_at is not None else ex.last
        reply = Reply(
            status=ex.status,
            version="1.0" if self._parser.get_http_version() == "1.0" else "1.1",
            reason=ex.reason.decode("latin-1"),
            headers=tuple(ex.headers),
            head_size=ex.head_size,
            body=body,
            truncated=truncated,
            peer_ip=self.peer_ip,
            target=ex.request.target,
            sent=ex.request.sent,
            latency=head_at - ex.started,
        )
        self._keep = keep and truncated is None
        if not self._keep:
            self.drop()
        ex.future.set_result(reply)

    def _fail(self, error: Exception) -> None:
        ex = self._end()
        self.drop()
        if ex is not None:
            ex.future.set_exception(error)

    def _end(self) -> _Exchange | None:
        ex, self._exchange = self._exchange, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if ex is None or ex.future.done():
            return None
        return ex


def _until_close(status: int, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a response's body runs to the connection's end (RFC 9112 §6.3)."""
    if status in (204, 304):
        return False
    for name, _value in headers:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            return False
    return True
