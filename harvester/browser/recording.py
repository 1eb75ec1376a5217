"""One page's recording: every response the page's requests get, read at the response stage of
the CDP ``Fetch`` domain, as browsertrix-crawler records.

``Fetch.enable`` pauses every request once its response head is in (``requestStage``
Response): the body is read then (``Fetch.getResponseBody``, before the browser could evict
it), and the request goes on (``Fetch.continueRequest``). Top-frame document requests are also
paused before they are sent: once the page's own document has answered, a navigation the page
asks for is not made but noted (its URL goes to the crawl's frontier), so the page stays.

What is recorded, and how:

* A body comes back decoded (the browser removed its content coding): the stored head drops
  ``Content-Encoding`` (kept as ``X-Archive-Orig-Content-Encoding``), ``Transfer-Encoding``,
  and says the decoded length in ``Content-Length``. A body whose length disagrees with an
  uncoded head's ``Content-Length`` is not stored (the browser got less than was announced).
* A redirect is stored with its head and an empty body; the page's own document answering with
  a redirect ends the page there (the crawl queues the target, as for a plain fetch).
* ``206`` partial answers are not stored: their URLs are fetched whole afterwards by the
  harvester's fetcher (browsertrix fetches them again without ``Range``), which replay
  serves ranges from.
* ``text/event-stream`` answers never end: not read, not stored (as browsertrix).
* Service workers are bypassed (``Network.setBypassServiceWorker``; browsertrix's default
  disables them), so what a worker would serve is fetched, and recorded, by the page.
* The address each answer came from (``WARC-IP-Address``) is the one the ``Network``
  domain's events name for its request (``remoteIPAddress``), given to its exchange as they
  come, before or after it is recorded.
* Past ``max_requests`` answers, a request is failed (``BlockedByClient``); a body larger than
  ``max_size`` is not read; a body that does not arrive in the page's time is not stored.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from harvester.http.exchange import Header, HttpExchange, first_header

log = logging.getLogger(__name__)
Send = Callable[..., Awaitable[dict[str, Any]]]
STREAMING = "text/event-stream"
_DROPPED = frozenset({"content-encoding", "transfer-encoding", "content-length"})


class Recording:
    """The exchanges of one page load, gathered from ``Fetch.requestPaused`` events."""

    def __init__(
        self, url: str, frame: str, send: Send, *, max_requests: int, max_size: int, until: float
    ) -> None:
        self.url, self.frame, self._send = url, frame, send
        self.max_requests, self.max_size, self.until = max_requests, max_size, until
        self.exchanges: list[HttpExchange] = []
        self.document: HttpExchange | None = None
        self.committed = False  # the page's own document answered (not a redirect)
        self.redirected = asyncio.Event()  # ...or answered with a redirect: the page ends
        self.navigations: list[str] = []
        self.partial: list[str] = []
        self.answers = 0
        self.refused = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.opened = self.last_event = time.monotonic()  # made as the page is navigated
        # by the network's request ID: an address for an answer not recorded yet, an exchange
        # recorded without its address yet
        self._addresses: dict[str, str] = {}
        self._by_network: dict[str, HttpExchange] = {}

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def paused(self, params: dict[str, Any]) -> None:
        """A ``Fetch.requestPaused`` event: handled in a task of its own."""
        self.last_event = time.monotonic()
        task = asyncio.get_running_loop().create_task(self._handle(params))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def addressed(self, params: dict[str, Any]) -> None:
        """A ``Network`` event with a response (``responseReceived``, or ``requestWillBeSent``
        after a redirect): the address it came from, given to its exchange."""
        response = params.get("response") or params.get("redirectResponse") or {}
        address = str(response.get("remoteIPAddress") or "").strip("[]")
        if not address:
            return
        exchange = self._by_network.pop(params["requestId"], None)
        if exchange is not None and exchange.peer_ip is None:
            exchange.peer_ip = address
        else:  # not recorded yet
            self._addresses[params["requestId"]] = address

    async def settle(self) -> None:
        """Every paused request handled (each bounded by the page's time)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def _handle(self, params: dict[str, Any]) -> None:
        rid = params["requestId"]
        try:
            if "responseStatusCode" not in params and "responseErrorReason" not in params:
                await self._request_stage(rid, params)
            elif "responseErrorReason" in params:
                await self._go_on(rid)
            else:
                await self._response_stage(rid, params)
        except Exception as exc:  # the tab went away, or a command timed out
            log.debug("%s: %s", params.get("request", {}).get("url"), exc)
        finally:
            self.last_event = time.monotonic()

    async def _request_stage(self, rid: str, params: dict[str, Any]) -> None:
        url = params["request"]["url"]
        if self.committed and params.get("frameId") == self.frame:
            if url.startswith(("http://", "https://")) and url != self.url:
                self.navigations.append(url.split("#", 1)[0])
            await self._send("Fetch.failRequest", {"requestId": rid, "errorReason": "Aborted"})
            return
        await self._go_on(rid)

    async def _response_stage(self, rid: str, params: dict[str, Any]) -> None:
        started, head = datetime.now(UTC), time.monotonic()
        status = int(params["responseStatusCode"])
        heads = _headers(params.get("responseHeaders", []))
        ours = (
            params.get("resourceType") == "Document"
            and params.get("frameId") == self.frame
            and not self.committed
        )
        self.answers += 1
        if self.answers > self.max_requests and not ours:
            self.refused += 1
            await self._send(
                "Fetch.failRequest", {"requestId": rid, "errorReason": "BlockedByClient"}
            )
            return
        kind = (first_header(heads, "content-type") or "").split(";", 1)[0].strip().lower()
        if kind == STREAMING or status == 206:
            if status == 206:
                self.partial.append(params["request"]["url"])
            await self._go_on(rid)
            return
        body = await self._body(rid, status, heads)
        exchange = None if body is None else _exchange(params, status, heads, body, started)
        if exchange is not None:
            self.exchanges.append(exchange)
            network = str(params.get("networkId") or "")
            exchange.peer_ip = self._addresses.pop(network, None)
            self._by_network[network] = exchange
        if ours and exchange is not None and self.document is None:
            # the page's own fetch, timed from its navigation (its host's rest counts it)
            exchange.latency, exchange.elapsed = head - self.opened, time.monotonic() - self.opened
            self.document = exchange
            if 300 <= status < 400 and first_header(heads, "location"):
                self.redirected.set()  # the page is this redirect: the crawl follows it
                await self._send("Fetch.failRequest", {"requestId": rid, "errorReason": "Aborted"})
                return
            self.committed = True
        await self._go_on(rid)

    async def _body(self, rid: str, status: int, heads: list[Header]) -> bytes | None:
        """The body as the browser decoded it; None when it cannot be stored whole."""
        if 300 <= status < 400 or status in (204, 304):
            return b""
        declared = first_header(heads, "content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_size:
            return None
        left = max(1.0, self.until - time.monotonic())
        got = await self._send("Fetch.getResponseBody", {"requestId": rid}, timeout=left)
        raw = got.get("body", "")
        body = base64.b64decode(raw) if got.get("base64Encoded") else raw.encode("utf-8")
        coding = first_header(heads, "content-encoding") or "identity"
        coded = coding.strip().lower() != "identity"
        if not coded and declared is not None and declared.isdigit() and int(declared) != len(body):
            log.info(
                "%s: %d bytes for a Content-Length of %s, not stored", rid, len(body), declared
            )
            return None
        return body if len(body) <= self.max_size else None

    async def _go_on(self, rid: str) -> None:
        await self._send("Fetch.continueRequest", {"requestId": rid})


def _headers(fields: list[dict[str, str]]) -> list[Header]:
    """CDP's header list, a field with several values (joined by newlines) made one each."""
    out: list[Header] = []
    for field in fields:
        out += [(field["name"], value) for value in str(field["value"]).split("\n")]
    return out


def stored_head(heads: list[Header], length: int) -> list[Header]:
    """The response head as stored with a decoded body of ``length`` bytes.

    >>> stored_head([("Content-Encoding", "gzip"), ("Content-Length", "9")], 20)
    [('Content-Length', '20'), ('X-Archive-Orig-Content-Encoding', 'gzip')]
    """
    kept = [(k, v) for k, v in heads if k.lower() not in _DROPPED]
    coding = first_header(heads, "content-encoding")
    extra = [("X-Archive-Orig-Content-Encoding", coding)] if coding else []
    return [*kept, ("Content-Length", str(length)), *extra]


def _exchange(
    params: dict[str, Any], status: int, heads: list[Header], body: bytes, started: datetime
) -> HttpExchange | None:
    request = params["request"]
    url = request["url"]
    if not url.startswith(("http://", "https://")):
        return None  # data:, blob: and the like are the page's own
    sent = [(str(k), str(v)) for k, v in request.get("headers", {}).items()]
    if not any(k.lower() == "host" for k, _ in sent):
        sent.insert(0, ("Host", urlsplit(url).netloc))
    posted = _posted(request)
    if posted:
        sent = [(k, v) for k, v in sent if k.lower() != "content-length"]
        sent.append(("Content-Length", str(len(posted))))
    reason = params.get("responseStatusText") or _phrase(status)
    return HttpExchange(
        url=url,
        method=str(request.get("method", "GET")),
        protocol="HTTP/1.1",
        status=status,
        reason=reason,
        request_headers=tuple(sent),
        response_headers=tuple(stored_head(heads, len(body))),
        body=body,
        started=started,
        request_body=posted,
    )


def _posted(request: dict[str, Any]) -> bytes:
    """The request's body, from its entries (bytes, base64) or its text."""
    entries = request.get("postDataEntries") or []
    if entries:
        return b"".join(base64.b64decode(e.get("bytes", "")) for e in entries)
    text = request.get("postData")
    return str(text).encode("utf-8") if text else b""


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
