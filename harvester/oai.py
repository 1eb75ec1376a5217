"""The harvester's one seam to OAI-PMH 2.0: Identify, ListIdentifiers and ListRecords.

The protocol model is sickle's (:class:`sickle.Sickle`, :class:`sickle.response.OAIResponse`,
the ``Header`` and ``ResumptionToken`` models); the HTTP underneath is our own,
in :meth:`SafeSickle.harvest`, because an OAI-PMH response is untrusted input:

- **XML** is parsed once, by an lxml parser that resolves no entities, loads no DTD, reads
  nothing from the network and keeps libxml2's size limits (no ``huge_tree``). A document with
  a DOCTYPE is refused outright (spec §3.2 asks for character references, never entities),
  so neither XXE nor "billion laughs" gets anywhere. That tree is what sickle's models see:
  :class:`SafeOAIResponse` hands it out as ``.xml`` instead of re-parsing the text with
  sickle's own (recovering) parser.
- **Envelope** (§3.2): the root must be ``OAI-PMH`` in the OAI namespace with a valid
  ``responseDate`` and either an ``<error>`` or the element of the verb asked for. Anything
  else is a :class:`ProtocolError` naming the URL and the reason.
- **Errors** (§3.6): ``<error code="x">`` raises the harvester exception of the same name
  (:meth:`OAIError.for_code`) from ``harvest`` itself, before sickle's iterator could raise
  its own ``sickle.oaiexceptions``; so even sickle's iterators, run on :class:`SafeSickle`,
  raise ours, and codes sickle does not know (``noMetadataFormats``) keep their class.
- **Size and time**: the body is read streamed up to ``max_bytes`` (also after gzip/deflate
  decoding, so a compression bomb costs no more than that), with connect/read timeouts and
  an overall deadline per response.
- **Retries** (§3.1.2.2): 429, 5xx, resets and timeouts are retried up to ``max_retries``
  times with exponential back-off and jitter, honouring ``Retry-After`` as delta-seconds or
  as an HTTP-date, each wait capped at ``max_wait``; then :class:`TransientFetchError`.
- **Redirects** (§3.1.2.2, 302 to another repository) are followed by hand, at most
  ``MAX_REDIRECTS`` hops, without reading the bodies of the hops.

Lists are exposed page by page (§3.5) with their ``responseDate`` and the next token, so the
caller can persist its position after each page and resume with the token in a new client.
The datestamp helpers (§3.3) are pure functions.
"""

from __future__ import annotations

import logging
import random
import re
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.client import HTTPException
from types import TracebackType
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from lxml import etree
from sickle import Sickle
from sickle.models import Header, ResumptionToken
from sickle.response import OAIResponse
from urllib3.exceptions import HTTPError as Urllib3Error

from harvester import __version__
from harvester.exceptions import (
    HarvestError,
    OAIError,
    PermanentFetchError,
    ProtocolError,
    TransientFetchError,
)
from harvester.fetch import backoff_delay, parse_retry_after, utcnow

log = logging.getLogger(__name__)

OAI_NS = "http://www.openarchives.org/OAI/2.0/"
_OAI = "{" + OAI_NS + "}"
DAY = "YYYY-MM-DD"
SECONDS = "YYYY-MM-DDThh:mm:ssZ"
GRANULARITIES = (DAY, SECONDS)
DELETED_RECORD_POLICIES = ("no", "transient", "persistent")

DEFAULT_USER_AGENT = f"coop-archive-harvester/{__version__} (OAI-PMH)"
DEFAULT_MAX_BYTES = 64 * 2**20
MAX_REDIRECTS = 5
CHUNK_SIZE = 64 * 1024
# §3.1.3: a harvester that sends Accept-Encoding must list identity with a non-zero qvalue.
ACCEPT_ENCODING = "gzip, deflate, identity"

_DATE_FORMATS = {DAY: "%Y-%m-%d", SECONDS: "%Y-%m-%dT%H:%M:%SZ"}
_DATE_PATTERNS = {
    DAY: re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
    SECONDS: re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"),
}
_UNITS = {DAY: timedelta(days=1), SECONDS: timedelta(seconds=1)}
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}

HeaderField = tuple[str, str]


# -- datestamps (§3.3) --------------------------------------------------------------------


def parse_oai_datestamp(text: str) -> datetime:
    """A UTCdatetime in either granularity, as an aware UTC datetime.

    >>> parse_oai_datestamp("2024-05-10T12:30:00Z")
    datetime.datetime(2024, 5, 10, 12, 30, tzinfo=datetime.timezone.utc)
    >>> parse_oai_datestamp("2024-05-10")
    datetime.datetime(2024, 5, 10, 0, 0, tzinfo=datetime.timezone.utc)
    >>> parse_oai_datestamp("2024-02-30")
    Traceback (most recent call last):
    ...
    harvester.exceptions.ProtocolError: bad OAI-PMH datestamp '2024-02-30'
    >>> parse_oai_datestamp("2024-05-10T12:30:00+02:00")
    Traceback (most recent call last):
    ...
    harvester.exceptions.ProtocolError: bad OAI-PMH datestamp '2024-05-10T12:30:00+02:00'
    """
    value = text.strip()
    for granularity, pattern in _DATE_PATTERNS.items():
        if pattern.fullmatch(value):
            try:
                parsed = datetime.strptime(value, _DATE_FORMATS[granularity])
            except ValueError:
                break
            return parsed.replace(tzinfo=UTC)
    raise ProtocolError(f"bad OAI-PMH datestamp {text!r}")


def format_for_granularity(moment: datetime, granularity: str) -> str:
    """``moment`` (timezone-aware) as a ``from``/``until`` argument in ``granularity``.

    >>> when = datetime(2024, 5, 10, 12, 30, 5, 999, tzinfo=UTC)
    >>> format_for_granularity(when, "YYYY-MM-DD"), format_for_granularity(when, SECONDS)
    ('2024-05-10', '2024-05-10T12:30:05Z')
    """
    if granularity not in _DATE_FORMATS:
        raise ValueError(f"unknown OAI-PMH granularity {granularity!r}")
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no defined UTC time")
    utc = moment.astimezone(UTC)
    day = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"  # strftime drops zeros before 1000
    return day if granularity == DAY else f"{day}T{utc:%H:%M:%S}Z"


def overlap_from(previous_response_date: str, granularity: str) -> str:
    """The ``from`` of an incremental harvest: the last responseDate less one granularity unit.

    The overlap re-lists anything changed in the same second (or day) as the last response.

    >>> overlap_from("2024-05-10T12:30:00Z", SECONDS)
    '2024-05-10T12:29:59Z'
    >>> overlap_from("2024-03-01T00:00:30Z", DAY)
    '2024-02-29'
    >>> overlap_from("0001-01-01T00:00:00Z", DAY)
    '0001-01-01'
    """
    moment = parse_oai_datestamp(previous_response_date)
    unit = _UNITS.get(granularity)
    if unit is None:
        raise ValueError(f"unknown OAI-PMH granularity {granularity!r}")
    try:
        moment -= unit
    except OverflowError:
        moment = datetime.min.replace(tzinfo=UTC)
    return format_for_granularity(moment, granularity)


# -- values ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointInfo:
    """What an Identify response (§4.2) says about a repository.

    ``endpoint`` is the URL this client asked; ``base_url`` is what the repository claims.
    """

    endpoint: str
    base_url: str
    repository_name: str
    granularity: str
    deleted_record: str
    earliest_datestamp: str
    protocol_version: str
    compression: tuple[str, ...]


@dataclass(frozen=True)
class ListedHeader:
    """One ``<header>`` of a list (§2.5): the item's identifier, datestamp and sets."""

    identifier: str
    datestamp: str
    set_specs: tuple[str, ...]
    deleted: bool


@dataclass(frozen=True)
class ListPage:
    """One ListIdentifiers response; ``token`` is None on the last page (§3.5)."""

    headers: tuple[ListedHeader, ...]
    response_date: str
    token: str | None
    cursor: int | None
    complete_list_size: int | None


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and its response, for archiving.

    ``body`` is the entity body as received, content coding (gzip, deflate) kept and transfer
    coding (chunked) removed, so a WARC writer must drop ``Transfer-Encoding`` from the stored
    headers. ``content`` is ``body`` decoded: the bytes that were parsed. ``url`` is the
    final hop's URL; ``started`` the moment the request was sent.
    """

    url: str
    method: str
    request_headers: tuple[HeaderField, ...]
    http_version: str
    status: int
    reason: str
    response_headers: tuple[HeaderField, ...]
    body: bytes
    content: bytes
    started: datetime

    def header(self, name: str) -> str | None:
        """The first response header called ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        return next((v for k, v in self.response_headers if k.lower() == wanted), None)


@dataclass(frozen=True)
class RawRecord:
    """One ``<record>`` of a ListRecords page: its header and the parsed element."""

    header: ListedHeader
    element: etree._Element

    @property
    def metadata(self) -> etree._Element | None:
        """The metadata format's root element (e.g. ``didl:DIDL``); None for deletions."""
        return next(iter(self.element.iterfind(f"{_OAI}metadata/*")), None)


@dataclass(frozen=True)
class RawPage:
    """One ListRecords response: the HTTP exchange as received plus its parsed records."""

    exchange: Exchange
    records: tuple[RawRecord, ...]
    response_date: str
    token: str | None
    cursor: int | None
    complete_list_size: int | None


@dataclass(frozen=True)
class _Limits:
    """The bounds of every request; times in seconds, sizes in bytes."""

    user_agent: str
    timeout: float
    max_retries: int
    max_bytes: int
    max_wait: float
    backoff: float
    deadline: float


# -- XML ------------------------------------------------------------------------------


def _xml_parser() -> etree.XMLParser:
    # One per document: lxml parsers keep state and must not be shared between threads.
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        load_dtd=False,
        dtd_validation=False,
        recover=False,
    )


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


def check_envelope(root: etree._Element, verb: str, url: str) -> str:
    """The responseDate of a §3.2 response envelope, after checking its shape."""
    if root.tag != _OAI + "OAI-PMH":
        raise ProtocolError(f"{url}: not an OAI-PMH response (root element {root.tag!r})")
    date = root.findtext(_OAI + "responseDate")
    if not date:
        raise ProtocolError(f"{url}: OAI-PMH response without responseDate")
    try:
        parse_oai_datestamp(date)
    except ProtocolError as exc:
        raise ProtocolError(f"{url}: bad responseDate ({exc})") from None
    error = root.find(_OAI + "error")
    if error is not None:
        code = error.get("code", "")
        raise OAIError.for_code(code, f"{(error.text or code).strip()} ({url})")
    if root.find(_OAI + verb) is None:
        raise ProtocolError(f"{url}: OAI-PMH response without a <{verb}> element")
    return date.strip()


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


def _request_headers(response: requests.Response) -> tuple[HeaderField, ...]:
    sent = [
        (name, value.decode("latin-1") if isinstance(value, bytes) else value)
        for name, value in response.request.headers.items()
    ]
    if not any(k.lower() == "host" for k, _ in sent):  # http.client adds Host on the wire
        sent.insert(0, ("Host", urlsplit(response.url).netloc.rpartition("@")[2]))
    return tuple(sent)


class _Http:
    """GET with retries, redirects, bounded reads and safe decoding; one per client."""

    def __init__(
        self,
        session: requests.Session,
        limits: _Limits,
        sleep: Callable[[float], None],
        clock: Callable[[], datetime],
        rng: random.Random,
    ) -> None:
        self.session = session
        self.limits = limits
        self._sleep = sleep
        self._clock = clock
        self._rng = rng

    def get(self, url: str, params: dict[str, str]) -> Exchange:
        """The exchange for ``url?params``, after retrying transient failures."""
        attempt = 0
        while True:
            try:
                return self._attempt(url, params)
            except TransientFetchError as error:
                delay = self._retry_delay(attempt, error)
                if delay is None:
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

    def _attempt(self, url: str, params: dict[str, str] | None) -> Exchange:
        for _hop in range(MAX_REDIRECTS + 1):
            started = self._clock()
            response = self._send(url, params)
            with closing(response):
                location = response.headers.get("Location")
                if response.status_code not in _REDIRECT_STATUSES or not location:
                    return self._receive(response, started)
            url, params = urljoin(response.url, location), None
            if urlsplit(url).scheme not in ("http", "https"):
                raise PermanentFetchError(f"redirect to a non-HTTP URL: {url}")
        raise PermanentFetchError(f"more than {MAX_REDIRECTS} redirects from {url}")

    def _send(self, url: str, params: dict[str, str] | None) -> requests.Response:
        headers = {"User-Agent": self.limits.user_agent, "Accept-Encoding": ACCEPT_ENCODING}
        timeout = (self.limits.timeout, self.limits.timeout)
        try:
            return self.session.get(
                url,
                params=params,
                headers=headers,
                timeout=timeout,
                stream=True,
                allow_redirects=False,
            )
        except requests.exceptions.SSLError as exc:
            raise PermanentFetchError(f"TLS failure for {url}: {exc}") from exc
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise TransientFetchError(f"cannot reach {url}: {exc}") from exc
        except requests.RequestException as exc:
            raise PermanentFetchError(f"cannot request {url}: {exc}") from exc

    def _receive(self, response: requests.Response, started: datetime) -> Exchange:
        url, status = response.url, response.status_code
        if status == 429 or 500 <= status < 600:
            header = response.headers.get("Retry-After")
            wait = None if header is None else parse_retry_after(header, self._clock())
            raise TransientFetchError(f"HTTP {status} {response.reason} from {url}", wait)
        if not 200 <= status < 300:
            raise PermanentFetchError(f"HTTP {status} {response.reason} from {url}", status)
        body = self._read_body(response)
        coding = response.headers.get("Content-Encoding")
        return Exchange(
            url=url,
            method="GET",
            request_headers=_request_headers(response),
            http_version="HTTP/1.0" if response.raw.version == 10 else "HTTP/1.1",
            status=status,
            reason=response.reason or "",
            response_headers=tuple(response.raw.headers.items()),
            body=body,
            content=decode_content(body, coding, self.limits.max_bytes, url),
            started=started,
        )

    def _read_body(self, response: requests.Response) -> bytes:
        url, limit = response.url, self.limits.max_bytes
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ProtocolError(f"{url}: response of {declared} bytes exceeds {limit}")
        chunks: list[bytes] = []
        size, deadline = 0, time.monotonic() + self.limits.deadline
        try:
            for chunk in response.raw.stream(CHUNK_SIZE, decode_content=False):
                size += len(chunk)
                if size > limit:
                    raise ProtocolError(f"{url}: response exceeds {limit} bytes")
                if time.monotonic() > deadline:
                    raise TransientFetchError(f"{url}: response took over the deadline")
                chunks.append(chunk)
        except (Urllib3Error, HTTPException, OSError) as exc:
            raise TransientFetchError(f"{url}: connection broken mid-response: {exc}") from exc
        return b"".join(chunks)


# -- sickle ---------------------------------------------------------------------------


class SafeOAIResponse(OAIResponse):  # type: ignore[misc]
    """sickle's response, holding the tree we parsed safely instead of re-parsing the text."""

    def __init__(
        self, exchange: Exchange, params: dict[str, str], xml: etree._Element, date: str
    ) -> None:
        super().__init__(http_response=exchange, params=params)
        self.exchange = exchange
        self.response_date = date
        self._xml = xml

    @property
    def xml(self) -> etree._Element:
        return self._xml

    @property
    def raw(self) -> str:
        encoding = self._xml.getroottree().docinfo.encoding or "utf-8"
        return self.exchange.content.decode(encoding, errors="replace")


class SafeSickle(Sickle):  # type: ignore[misc]
    """A :class:`sickle.Sickle` whose ``harvest`` does bounded HTTP and safe parsing."""

    def __init__(self, endpoint: str, http: _Http) -> None:
        super().__init__(endpoint, max_retries=0)
        self._http = http

    def harvest(self, **kwargs: str) -> SafeOAIResponse:
        """One OAI-PMH request; raises our exceptions for OAI errors and bad responses."""
        exchange = self._http.get(self.endpoint, kwargs)
        root = parse_oai_xml(exchange.content, exchange.url)
        date = check_envelope(root, kwargs.get("verb", ""), exchange.url)
        log.debug("%s %s: %d bytes", kwargs.get("verb"), exchange.url, len(exchange.body))
        return SafeOAIResponse(exchange, kwargs, root, date)


# -- the client -----------------------------------------------------------------------


def _required_text(element: etree._Element, name: str, url: str) -> str:
    value = (element.findtext(_OAI + name) or "").strip()
    if not value:
        raise ProtocolError(f"{url}: <{element.tag.rpartition('}')[2]}> without <{name}>")
    return value


def _texts(element: etree._Element, name: str) -> tuple[str, ...]:
    found = ((child.text or "").strip() for child in element.iterfind(_OAI + name))
    return tuple(text for text in found if text)


def _one_of(value: str, allowed: tuple[str, ...], what: str, url: str) -> str:
    if value not in allowed:
        raise ProtocolError(f"{url}: {what} {value!r} is not one of {', '.join(allowed)}")
    return value


def _listed_header(element: etree._Element | None, url: str) -> ListedHeader:
    """sickle's Header model of ``element``, checked: an identifier and a valid datestamp."""
    if element is None:
        raise ProtocolError(f"{url}: <record> without <header>")
    header = Header(element)
    identifier, datestamp = (header.identifier or "").strip(), (header.datestamp or "").strip()
    if not identifier:
        raise ProtocolError(f"{url}: <header> without <identifier>")
    try:
        parse_oai_datestamp(datestamp)
    except ProtocolError as exc:
        raise ProtocolError(f"{url}: header {identifier!r}: {exc}") from None
    specs = tuple(s.strip() for s in header.setSpecs if s and s.strip())
    return ListedHeader(identifier, datestamp, specs, bool(header.deleted))


def _optional_int(value: str | None, what: str, url: str) -> int | None:
    if value is None or not value.strip():
        return None
    if not value.strip().isdigit():
        raise ProtocolError(f"{url}: resumptionToken {what} {value!r} is not a number")
    return int(value)


def _resumption(response: SafeOAIResponse, verb: str) -> ResumptionToken:
    """The resumptionToken closing the page (§3.5), its token None on the last page."""
    element = response.xml.find(f"{_OAI}{verb}/{_OAI}resumptionToken")
    if element is None:
        return ResumptionToken(token=None, cursor=None, complete_list_size=None)
    url = response.exchange.url
    return ResumptionToken(
        token=(element.text or "").strip() or None,
        cursor=_optional_int(element.get("cursor"), "cursor", url),
        complete_list_size=_optional_int(element.get("completeListSize"), "size", url),
        expiration_date=element.get("expirationDate"),
    )


def _list_args(
    metadata_prefix: str,
    from_: str | None,
    until: str | None,
    set_spec: str | None,
    resumption_token: str | None,
) -> dict[str, str]:
    """The arguments of a list request; a resumptionToken is exclusive (§4.3)."""
    if resumption_token is not None:
        if from_ or until or set_spec:
            raise ValueError("a resumptionToken excludes from, until and set")
        return {"resumptionToken": resumption_token}
    optional = {"from": from_, "until": until, "set": set_spec}
    return {"metadataPrefix": metadata_prefix, **{k: v for k, v in optional.items() if v}}


class OAIClient:
    """Identify and list one OAI-PMH endpoint, page by page.

    Each list method yields one page per response, carrying the token that fetches the next
    page; a new client given that token continues the same list.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        user_agent: str = DEFAULT_USER_AGENT,
        timeout: float = 30.0,
        max_retries: int = 5,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_wait: float = 120.0,
        backoff: float = 1.0,
        deadline: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = utcnow,
        rng: random.Random | None = None,
        session: requests.Session | None = None,
    ) -> None:
        limits = _Limits(user_agent, timeout, max_retries, max_bytes, max_wait, backoff, deadline)
        self.endpoint = endpoint
        self._own_session = session is None
        self._session = session or requests.Session()
        http = _Http(self._session, limits, sleep, clock, rng or random.Random())
        self.sickle = SafeSickle(endpoint, http)

    def identify(self) -> EndpointInfo:
        """The repository's self-description (§4.2), checked for what harvesting needs."""
        response = self.sickle.harvest(verb="Identify")
        # Not sickle's Identify model: it setattr()s every descendant's tag name, so a
        # <__class__> in a <description> would raise TypeError instead of a ProtocolError.
        element, url = response.xml.find(_OAI + "Identify"), response.exchange.url
        granularity = _required_text(element, "granularity", url)
        earliest = _required_text(element, "earliestDatestamp", url)
        try:
            parse_oai_datestamp(earliest)
        except ProtocolError as exc:
            raise ProtocolError(f"{url}: bad earliestDatestamp ({exc})") from None
        deleted = _required_text(element, "deletedRecord", url)
        version = _required_text(element, "protocolVersion", url)
        return EndpointInfo(
            endpoint=self.endpoint,
            base_url=_required_text(element, "baseURL", url),
            repository_name=_required_text(element, "repositoryName", url),
            granularity=_one_of(granularity, GRANULARITIES, "granularity", url),
            deleted_record=_one_of(deleted, DELETED_RECORD_POLICIES, "deletedRecord", url),
            earliest_datestamp=earliest,
            protocol_version=_one_of(version, ("2.0",), "protocolVersion", url),
            compression=_texts(element, "compression"),
        )

    def list_identifiers(
        self,
        *,
        metadata_prefix: str = "oai_dc",
        from_: str | None = None,
        until: str | None = None,
        set_spec: str | None = None,
        resumption_token: str | None = None,
    ) -> Iterator[ListPage]:
        """ListIdentifiers (§4.3), one page at a time; continues a list given its token.

        Raises NoRecordsMatch when the selection is empty, BadResumptionToken when the
        provider refuses a token (restart from the saved datestamp).
        """
        args = _list_args(metadata_prefix, from_, until, set_spec, resumption_token)
        for response, resumption in self._pages("ListIdentifiers", args):
            url = response.exchange.url
            elements = response.xml.iterfind(f"{_OAI}ListIdentifiers/{_OAI}header")
            yield ListPage(
                headers=tuple(_listed_header(e, url) for e in elements),
                response_date=response.response_date,
                token=resumption.token,
                cursor=resumption.cursor,
                complete_list_size=resumption.complete_list_size,
            )

    def list_records_raw(
        self,
        *,
        metadata_prefix: str,
        from_: str | None = None,
        until: str | None = None,
        set_spec: str | None = None,
        resumption_token: str | None = None,
    ) -> Iterator[RawPage]:
        """ListRecords (§4.5), one page at a time, each with its HTTP exchange as received."""
        args = _list_args(metadata_prefix, from_, until, set_spec, resumption_token)
        for response, resumption in self._pages("ListRecords", args):
            url = response.exchange.url
            elements = response.xml.iterfind(f"{_OAI}ListRecords/{_OAI}record")
            records = (RawRecord(_listed_header(e.find(_OAI + "header"), url), e) for e in elements)
            yield RawPage(
                exchange=response.exchange,
                records=tuple(records),
                response_date=response.response_date,
                token=resumption.token,
                cursor=resumption.cursor,
                complete_list_size=resumption.complete_list_size,
            )

    def _pages(
        self, verb: str, args: dict[str, str]
    ) -> Iterator[tuple[SafeOAIResponse, ResumptionToken]]:
        """The resumption loop (§3.5): request, yield the page, follow its token.

        A token seen before would fetch a page seen before, forever: a ProtocolError.
        """
        used: set[str] = set()
        while True:
            response = self.sickle.harvest(verb=verb, **args)
            resumption = _resumption(response, verb)
            if resumption.token in used:
                raise ProtocolError(f"{response.exchange.url}: resumptionToken repeats a loop")
            yield response, resumption
            if resumption.token is None:
                return
            used.add(resumption.token)
            args = {"resumptionToken": resumption.token}

    def close(self) -> None:
        """Release the HTTP session if this client made it."""
        if self._own_session:
            self._session.close()

    def __enter__(self) -> OAIClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def probe(
    site_url: str, *, paths: tuple[str, ...] = ("/oai", "/modoai"), **client_kwargs: Any
) -> EndpointInfo | None:
    """The first of ``site_url + path`` that answers a well-formed Identify, or None.

    Anything else at a path (404, HTML, garbage, a timeout, an OAI error) means: try the next.
    """
    base = site_url.rstrip("/")
    for path in paths:
        endpoint = base + path
        with OAIClient(endpoint, **client_kwargs) as client:
            try:
                return client.identify()
            except HarvestError as exc:
                log.info("no OAI-PMH endpoint at %s: %s", endpoint, exc)
    return None
