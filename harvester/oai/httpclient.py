"""The bounded HTTP exchange and the safe parsing under the OAI-PMH client (spec §3.1, §3.2).

An OAI-PMH response is untrusted input, so the client's HTTP is our own rather than sickle's:

- **XML** is parsed once, by an lxml parser that resolves no entities, loads no DTD, reads
  nothing from the network and keeps libxml2's size limits (no ``huge_tree``). A document with
  a DOCTYPE is refused outright (spec §3.2 asks for character references, never entities),
  so neither XXE nor "billion laughs" gets anywhere.
- **Envelope** (§3.2): the root must be ``OAI-PMH`` in the OAI namespace with a valid
  ``responseDate`` and either an ``<error>`` or the element of the verb asked for. Anything
  else is a :class:`ProtocolError` naming the URL and the reason.
- **Errors** (§3.6): ``<error code="x">`` raises the harvester exception of the same name
  (:meth:`OAIError.for_code`), so codes sickle does not know (``noMetadataFormats``) keep
  their class.
- **Size and time**: the body is read streamed up to ``max_bytes`` (also after gzip/deflate
  decoding, so a compression bomb costs no more than that), with connect/read timeouts and
  an overall deadline per request, its retries and their waits included: a body read as it
  arrives, so a server trickling one byte a second is stopped at the deadline too.
- **HTTP errors carrying OAI-PMH**: a 4xx or 5xx answer (but 429 and 503) whose body is an
  OAI-PMH ``<error>`` is that OAI-PMH answer (InvenioRDM, Zenodo: every error with 422), read
  and archived as any other; a 403 stops with an error saying the repository refuses the
  harvester (the OAI-PMH harvester guidelines).
- **Retries** (§3.1.2.2): 429, 5xx, resets and timeouts are retried up to ``max_retries``
  times with exponential back-off and jitter, honouring ``Retry-After`` as delta-seconds or
  as an HTTP-date (:mod:`harvester.http.retries`), each wait capped at ``max_wait``; then
  :class:`TransientFetchError`. The limits are :class:`~harvester.http.limits.OAILimits`.
- **Redirects** (§3.1.2.2, 302 to another repository) are followed by hand, at most
  ``MAX_REDIRECTS`` hops, without reading the bodies of the hops.

- **Transport** (:mod:`harvester.oai.transport`): each request is sent by a transport, by
  default kept-alive ``http.client`` connections (:mod:`harvester.oai.connectiontransport`, TLS
  verified as requests does), a ``requests`` session where the environment names a proxy.

Each response is kept as an :class:`~harvester.http.exchange.HttpExchange`, the bytes as received
(``url`` its final hop's URL, ``decoded`` the body decoded), so it can be archived.
"""

from __future__ import annotations

import logging
import random
import time
import zlib
from collections.abc import Callable
from contextlib import closing
from datetime import datetime
from http.client import HTTPException
from urllib.parse import urljoin, urlsplit

from lxml import etree
from urllib3.exceptions import HTTPError as Urllib3Error

from harvester.exceptions import (
    EnvelopeError,
    OAIError,
    PermanentFetchError,
    ProtocolError,
    TransientFetchError,
)
from harvester.http.exchange import HttpExchange, protocol
from harvester.http.limits import OAILimits
from harvester.http.redirects import REDIRECT_STATUSES
from harvester.http.retries import backoff_delay, transient_error
from harvester.oai.dates import response_date
from harvester.oai.models import OAI_NS
from harvester.oai.transport import Response, Transport

log = logging.getLogger(__name__)

_OAI = "{" + OAI_NS + "}"

MAX_REDIRECTS = 5
# §3.1.2.2: "come back later"; retried whatever the body says (harvester guidelines).
RETRY_LATER = (429, 503)
CHUNK_SIZE = 1024 * 1024  # the most a read takes: few reads (GIL round trips) for a large page
# §3.1.3: a harvester that sends Accept-Encoding must list identity with a non-zero qvalue.
ACCEPT_ENCODING = "gzip, deflate, identity"
# The rest of the request's head, as requests sends it by default.
_HEADERS = {"Accept": "*/*", "Connection": "keep-alive"}

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


# -- XML ------------------------------------------------------------------------------


def _xml_parser() -> etree.XMLParser:
    # One per document: lxml parsers keep state and must not be shared between threads. Off
    # by lxml's defaults as well: DTD validation, recovery and huge trees.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


def parse_oai_xml(content: bytes, url: str) -> etree._Element:
    """The root of ``content``, parsed safely; ProtocolError if malformed or with a DOCTYPE."""
    try:
        root = etree.fromstring(content, parser=_xml_parser())
    except etree.XMLSyntaxError as exc:
        if b"<!DOCTYPE" in content[:4096]:
            raise ProtocolError(f"{url}: DOCTYPE declarations are refused") from None
        raise ProtocolError(f"{url}: not well-formed XML ({str(exc)[:200]})") from None
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise ProtocolError(f"{url}: DOCTYPE declarations are refused")
    return root


def check_envelope(
    root: etree._Element, verb: str, url: str, status: int = 200
) -> tuple[str, str | None]:
    """The responseDate of a §3.2 response envelope, after checking its shape: in UTC
    (:func:`~harvester.oai.dates.response_date`), with the text as sent when it had to be
    converted (else None). An ``<error>`` raises its code's :class:`OAIError`, whose message
    names the code, and the HTTP ``status`` when it is not 200."""
    if root.tag != _OAI + "OAI-PMH":
        raise ProtocolError(f"{url}: not an OAI-PMH response (root element {root.tag!r})")
    sent = root.findtext(_OAI + "responseDate")
    if not sent:
        raise EnvelopeError(f"{url}: OAI-PMH response without responseDate")
    try:
        date, converted = response_date(sent, f"{url}: bad responseDate")
    except ProtocolError as exc:
        raise EnvelopeError(str(exc)) from None
    error = root.find(_OAI + "error")
    if error is not None:
        code, text = error.get("code", "").strip(), (error.text or "").strip()
        where = url if status == 200 else f"HTTP {status} from {url}"
        raise OAIError.for_code(code, f"{code or '(no code)'}: {text or code} ({where})")
    if root.find(_OAI + verb) is None:
        raise EnvelopeError(f"{url}: OAI-PMH response without a <{verb}> element")
    return date, sent.strip() if converted else None


def oai_error_body(content: bytes, url: str) -> bool:
    """Whether ``content`` (the body of an HTTP error answer) is an OAI-PMH response carrying
    an ``<error>``: InvenioRDM (Zenodo) sends every OAI-PMH error with status 422, and such
    an answer is read as OAI-PMH, not as a failed transport."""
    if content.lstrip()[:1] != b"<":
        return False
    try:
        root = parse_oai_xml(content, url)
    except ProtocolError:
        return False
    return root.tag == _OAI + "OAI-PMH" and root.find(_OAI + "error") is not None


# -- HTTP -----------------------------------------------------------------------------


def decode_content(body: bytes, coding: str | None, limit: int, url: str) -> bytes:
    """``body`` with its Content-Encoding removed, refusing more than ``limit`` bytes.

    >>> decode_content(zlib.compress(b"<a/>"), "deflate", 10, "u")
    b'<a/>'
    >>> decode_content(zlib.compress(b" " * 100), "deflate", 10, "u")
    Traceback (most recent call last):
    ...
    harvester.exceptions.ProtocolError: u: body decodes to more than 10 bytes
    """
    name = (coding or "identity").strip().lower()
    if name == "identity":
        return body
    if name not in _WBITS:
        raise ProtocolError(f"{url}: unsupported Content-Encoding {coding!r}")
    try:
        return _inflate(body, _WBITS[name], limit, url)
    except zlib.error:
        if name != "deflate":
            raise ProtocolError(f"{url}: corrupt {name} body") from None
    try:  # "deflate" as raw DEFLATE without the zlib wrapper, as some servers send it
        return _inflate(body, -zlib.MAX_WBITS, limit, url)
    except zlib.error:
        raise ProtocolError(f"{url}: corrupt deflate body") from None


def _inflate(data: bytes, wbits: int, limit: int, url: str) -> bytes:
    out = bytearray()
    while data:  # gzip members may follow each other
        inflater = zlib.decompressobj(wbits)
        out += inflater.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise ProtocolError(f"{url}: body decodes to more than {limit} bytes")
        if not inflater.eof:
            raise ProtocolError(f"{url}: truncated compressed body")
        data = inflater.unused_data
    return bytes(out)


class Http:
    """GET with retries, redirects, bounded reads and safe decoding, over ``transport``; one
    per client. ``accept_encoding`` is the Accept-Encoding sent (``identity``: no coding)."""

    def __init__(
        self,
        transport: Transport,
        limits: OAILimits,
        sleep: Callable[[float], None],
        clock: Callable[[], datetime],
        rng: random.Random,
        accept_encoding: str = ACCEPT_ENCODING,
    ) -> None:
        self.transport, self.limits, self.accept_encoding = transport, limits, accept_encoding
        self._sleep, self._clock, self._rng = sleep, clock, rng

    def get(self, url: str, params: dict[str, str]) -> HttpExchange:
        """The exchange for ``url?params``, after retrying transient failures."""
        attempt, deadline = 0, time.monotonic() + self.limits.deadline
        while True:
            try:
                return self._attempt(url, params, deadline)
            except TransientFetchError as error:
                delay = self._retry_delay(attempt, error)
                if delay is None or time.monotonic() + delay >= deadline:
                    raise TransientFetchError(
                        f"{error} (gave up after {attempt + 1} attempts)", error.retry_after
                    ) from error
                log.warning("retrying %s in %.1fs after: %s", url, delay, error)
                self._sleep(delay)
                attempt += 1

    def _retry_delay(self, attempt: int, error: TransientFetchError) -> float | None:
        if attempt >= self.limits.max_retries:
            return None
        cap = self.limits.max_wait
        wanted = None if error.retry_after is None else min(error.retry_after, cap)
        return backoff_delay(attempt, wanted, base=self.limits.backoff, cap=cap, rng=self._rng)

    def _attempt(self, url: str, params: dict[str, str] | None, deadline: float) -> HttpExchange:
        for _hop in range(MAX_REDIRECTS + 1):
            started = self._clock()
            response = self._send(url, params, deadline)
            with closing(response):
                location = response.header("Location")
                if response.status not in REDIRECT_STATUSES or not location:
                    return self._receive(response, started, deadline)
            url, params = urljoin(response.url, location), None
            if urlsplit(url).scheme not in ("http", "https"):
                raise PermanentFetchError(f"redirect to a non-HTTP URL: {url}")
        raise PermanentFetchError(f"more than {MAX_REDIRECTS} redirects from {url}")

    def _send(self, url: str, params: dict[str, str] | None, deadline: float) -> Response:
        wait = max(0.001, min(self.limits.timeout, deadline - time.monotonic()))
        headers = {
            "User-Agent": self.limits.user_agent,
            "Accept-Encoding": self.accept_encoding,
            **_HEADERS,
        }
        return self.transport.send(url, params, headers, wait)

    def _receive(self, response: Response, started: datetime, deadline: float) -> HttpExchange:
        """The exchange of a 2xx answer, or of a 4xx/5xx one whose body is an OAI-PMH error
        (read as the answer it is); else the status's error. A 403 stops: the harvester
        guidelines ask a harvester refused so to stop, not to try again."""
        url, status = response.url, response.status
        if status == 403:
            raise PermanentFetchError(
                f"HTTP 403 {response.reason} from {url}: the repository refuses this"
                " harvester; stopped (ask its administrator for access)",
                status,
            )
        if 200 <= status < 300:
            return self._exchange(response, started, deadline)
        if status >= 400 and status not in RETRY_LATER:
            answer = self._error_answer(response, started, deadline)
            if answer is not None:
                return answer
        retry_after = response.header("Retry-After")
        error = transient_error(status, response.reason, url, retry_after, self._clock())
        if error is not None:
            raise error
        raise PermanentFetchError(f"HTTP {status} {response.reason} from {url}", status)

    def _error_answer(
        self, response: Response, started: datetime, deadline: float
    ) -> HttpExchange | None:
        """The exchange of an HTTP error whose body is an OAI-PMH ``<error>``, else None."""
        try:
            exchange = self._exchange(response, started, deadline)
        except ProtocolError:  # too large, badly coded: judged by its status alone
            return None
        return exchange if oai_error_body(exchange.content, exchange.url) else None

    def _exchange(self, response: Response, started: datetime, deadline: float) -> HttpExchange:
        url, status = response.url, response.status
        body = self._read_body(response, deadline)
        coding = response.header("Content-Encoding")
        version = response.version  # http.client's 10 or 11
        return HttpExchange(
            url=url,
            method="GET",
            request_headers=response.request_headers,
            protocol=protocol(version // 10, version % 10),
            status=status,
            reason=response.reason,
            response_headers=response.headers,
            body=body,
            decoded=decode_content(body, coding, self.limits.max_bytes, url),
            started=started,
            peer_ip=getattr(response, "peer_ip", None),  # a test's transport may not say
        )

    def _read_body(self, response: Response, deadline: float) -> bytes:
        url, limit = response.url, self.limits.max_bytes
        declared = response.header("Content-Length") or ""
        if declared.isdigit() and int(declared) > limit:
            raise ProtocolError(f"{url}: response of {declared} bytes exceeds {limit}")
        chunks: list[bytes] = []
        size = 0
        try:
            # read1: whatever has arrived, so that the deadline is checked as bytes trickle in
            while chunk := response.read1(CHUNK_SIZE):
                size += len(chunk)
                if size > limit:
                    raise ProtocolError(f"{url}: response exceeds {limit} bytes")
                if time.monotonic() > deadline:
                    raise TransientFetchError(f"{url}: response took over the deadline")
                chunks.append(chunk)
        except (Urllib3Error, HTTPException, OSError) as exc:
            raise TransientFetchError(f"{url}: connection broken mid-response: {exc}") from exc
        return b"".join(chunks)
