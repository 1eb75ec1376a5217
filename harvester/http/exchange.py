"""The HTTP exchange: one request and the response to it, as the archive records it.

Both HTTP clients of the harvester produce this one value — the resource fetcher
(:mod:`harvester.http.fetch`, over :mod:`harvester.http.connectionpool`) and the OAI-PMH client
(:mod:`harvester.oai.httpclient`, requests) — and the recorder (:mod:`harvester.archive.recorder`)
turns it into WARC records. The HTTP version is spelled once, as the protocol token that
begins a status line (RFC 9112 §2.3, ``HTTP/1.0`` or ``HTTP/1.1``), because that is what the
WARC record's HTTP block must start with for replay tools such as pywb to read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

__all__ = [
    "PROTOCOLS",
    "Header",
    "HttpExchange",
    "Redirect",
    "first_header",
    "protocol",
    "wellformed_fields",
]

Header = tuple[str, str]
Redirect = tuple[str, int, str]  # (URL asked, status, absolute Location)
PROTOCOLS = ("HTTP/1.0", "HTTP/1.1")
MAX_FIELDS = 100
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")  # RFC 9110 §5.1, a field name
_VALUE = re.compile(r"[^\x00-\x08\x0a-\x1f\x7f]{0,8192}")  # no control characters but tab


def wellformed_fields(fields: Sequence[Header]) -> bool:
    """Whether ``fields`` could be a response's header fields as received: at most
    ``MAX_FIELDS``, each a token name and a value without control characters.

    >>> wellformed_fields([("Content-Type", "text/html")]), wellformed_fields([("a b", "x")])
    (True, False)
    """
    return len(fields) <= MAX_FIELDS and all(
        _TOKEN.fullmatch(name) and _VALUE.fullmatch(value) for name, value in fields
    )


def first_header(fields: Iterable[Header], name: str) -> str | None:
    """The value of the first field called ``name`` (lower-case; matched case-insensitively).

    >>> first_header([("ETag", '"a"'), ("etag", '"b"')], "etag")
    '"a"'
    """
    return next((v for k, v in fields if k.lower() == name), None)


def protocol(major: int, minor: int) -> str:
    """The protocol token for a response's version: ``HTTP/1.0`` for 1.0, else ``HTTP/1.1``.

    Both clients speak only HTTP/1.x, and replay tools accept only these two tokens, so any
    other 1.x minor version a server claims is recorded as 1.1.

    >>> protocol(1, 0), protocol(1, 1), protocol(1, 2)
    ('HTTP/1.0', 'HTTP/1.1', 'HTTP/1.1')
    """
    return "HTTP/1.0" if (major, minor) == (1, 0) else "HTTP/1.1"


@dataclass(slots=True)
class HttpExchange:
    """One HTTP request and its response, the bytes as received.

    ``url`` is the URL this request was sent to and this response came from: the WARC-Target-URI
    of its records. When a client followed redirects to get here, ``redirects`` lists the hops
    before it and ``requested`` is the URL first asked for. ``body`` is the entity body as
    received, content coding (gzip) kept and transfer coding (chunked) removed, so a WARC
    writer must drop ``Transfer-Encoding`` from the stored headers. ``decoded`` is ``body``
    with its content coding removed, when the client decoded it (the OAI-PMH client does, to
    parse it; the resource fetcher never does). ``started`` is when the request was sent.
    """

    url: str
    method: str
    protocol: str
    status: int
    reason: str
    request_headers: tuple[Header, ...]
    response_headers: tuple[Header, ...]
    body: bytes
    started: datetime
    decoded: bytes | None = None
    truncated: str | None = None  # a WARC-Truncated reason: "length", "time", "disconnect"
    peer_ip: str | None = None
    elapsed: float = 0.0  # seconds from the request to the end of the body
    latency: float = 0.0  # seconds until the response headers arrived
    redirects: tuple[Redirect, ...] = ()
    sent_target: str | None = None  # the request line's target as sent, when the client says
    request_body: bytes = b""  # a POST's body as sent (the browser's requests; our GETs: none)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, not {self.protocol!r}")

    @property
    def content(self) -> bytes:
        """The body without content coding: ``decoded``, or ``body`` when it has no coding.

        Raises ``ValueError`` for a content-coded body that no client decoded.
        """
        if self.decoded is not None:
            return self.decoded
        coding = (self.header("Content-Encoding") or "identity").strip().lower()
        if coding != "identity":
            raise ValueError(f"the {coding} body of {self.url} was not decoded")
        return self.body

    @property
    def requested(self) -> str:
        """The URL first asked for: ``url``, or the first hop's when redirects were followed."""
        return self.redirects[0][0] if self.redirects else self.url

    @property
    def target(self) -> str:
        """The request target in origin form (RFC 9112 §3.2.1): path and query, ``/`` at least;
        ``sent_target`` when the client said how it spelt them."""
        if self.sent_target is not None:
            return self.sent_target
        parts = urlsplit(self.url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    @property
    def request_line(self) -> str:
        """``GET /path HTTP/1.1``: the request line as sent."""
        return f"{self.method} {self.target} {self.protocol}"

    @property
    def status_line(self) -> str:
        """``HTTP/1.1 200 OK``: the status line as received (reason phrase possibly empty)."""
        return f"{self.protocol} {self.status} {self.reason}"

    def header(self, name: str) -> str | None:
        """The first response header called ``name`` (case-insensitive), or None."""
        return first_header(self.response_headers, name.lower())
