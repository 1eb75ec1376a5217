"""The harvester's one seam to OAI-PMH 2.0: Identify, ListMetadataFormats, ListIdentifiers
and ListRecords.

The protocol model is sickle's (:class:`sickle.Sickle`, :class:`sickle.response.OAIResponse`,
the ``Header`` and ``ResumptionToken`` models); the HTTP underneath is our own,
in :meth:`SafeSickle.harvest`, because an OAI-PMH response is untrusted input. The bounded
HTTP exchange, the safe XML parser and the envelope check live in :mod:`harvester.oai.httpclient`
(retries, redirects, size and time limits, no entities, no DTD); the datestamp helpers (§3.3),
pure functions, in :mod:`harvester.oai.dates`; the values a response is read into, in
:mod:`harvester.oai.models`; Identify read for what is usable of it, in
:mod:`harvester.oai.identify`. Together these ``oai*`` modules are the only
code that talks OAI-PMH.

- The tree parsed safely is what sickle's models see: :class:`SafeOAIResponse` hands it out
  as ``.xml`` instead of re-parsing the text with sickle's own (recovering) parser.
- ``<error code="x">`` raises the harvester exception of the same name
  (:meth:`OAIError.for_code`) from ``harvest`` itself, before sickle's iterator could raise
  its own ``sickle.oaiexceptions``; so even sickle's iterators, run on :class:`SafeSickle`,
  raise ours, and codes sickle does not know (``noMetadataFormats``) keep their class.

Lists are exposed page by page (§3.5) with their ``responseDate`` and the next token, so the
caller can persist its position after each page and resume with the token in a new client.
ListMetadataFormats is read by our own parsing under the same guard, should a repository hand
out tokens for it. A list that does not end is stopped with a ProtocolError naming the page's URL
(:class:`harvester.oai.guard.ListGuard`), as sickle would loop forever: a token used before in
the same list (``A, B, A``); 10 pages in a row that bring no new identifier yet hand out a
token; or, with a token still handed out, more than twice the declared ``completeListSize``
plus 1,000 headers listed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypedDict

import requests
from lxml import etree
from sickle import Sickle
from sickle.models import Header, ResumptionToken
from sickle.response import OAIResponse

from coop_common.component import Component
from harvester.clock import utcnow
from harvester.exceptions import (
    EnvelopeError,
    HarvestError,
    NoMetadataFormats,
    OAIError,
    ProtocolError,
    UnusableEndpoint,
)
from harvester.http.exchange import HttpExchange
from harvester.http.limits import OAILimits, oai_limits
from harvester.oai.connectiontransport import kept_alive
from harvester.oai.dates import (
    DAY,
    SECONDS,
    checked_datestamp,
    format_for_granularity,
    overlap_from,
    parse_oai_datestamp,
)
from harvester.oai.guard import ListGuard
from harvester.oai.httpclient import ACCEPT_ENCODING, Http, check_envelope, parse_oai_xml
from harvester.oai.identify import endpoint_info, note_offset
from harvester.oai.models import OAI_NS, EndpointInfo, ListedHeader, ListPage, RawPage, RawRecord
from harvester.oai.transport import SessionTransport, Transport
from harvester.settings import defaults

__all__ = [
    "DAY",
    "SECONDS",
    "EndpointInfo",
    "ListPage",
    "ListedHeader",
    "OAIClient",
    "RawPage",
    "RawRecord",
    "SafeOAIResponse",
    "SafeSickle",
    "format_for_granularity",
    "overlap_from",
    "parse_oai_datestamp",
    "probe",
]

log = logging.getLogger(__name__)

_OAI = "{" + OAI_NS + "}"

_FORMATS = f"{_OAI}ListMetadataFormats/{_OAI}metadataFormat"
_IDENTIFIERS = {  # where each list verb's page holds its identifiers (the guard's)
    "ListIdentifiers": f"{_OAI}ListIdentifiers/{_OAI}header/{_OAI}identifier",
    "ListRecords": f"{_OAI}ListRecords/{_OAI}record/{_OAI}header/{_OAI}identifier",
    "ListMetadataFormats": f"{_FORMATS}/{_OAI}metadataPrefix",
}


# -- sickle ---------------------------------------------------------------------------


class SafeOAIResponse(OAIResponse):  # type: ignore[misc]
    """sickle's response, holding the tree we parsed safely instead of re-parsing the text."""

    def __init__(
        self, exchange: HttpExchange, params: dict[str, str], xml: etree._Element, date: str
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

    def __init__(self, endpoint: str, http: Http) -> None:
        super().__init__(endpoint, max_retries=0)
        self._http = http

    def harvest(self, **kwargs: str) -> SafeOAIResponse:
        """One OAI-PMH request; raises our exceptions for OAI errors and bad responses."""
        exchange = self._http.get(self.endpoint, kwargs)
        root = parse_oai_xml(exchange.content, exchange.url)
        date, sent = check_envelope(root, kwargs.get("verb", ""), exchange.url, exchange.status)
        if sent is not None:
            note_offset(self.endpoint, sent, date)
        log.debug("%s %s: %d bytes", kwargs.get("verb"), exchange.url, len(exchange.body))
        return SafeOAIResponse(exchange, kwargs, root, date)


# -- the client -----------------------------------------------------------------------


def _listed_header(element: etree._Element | None, url: str) -> ListedHeader:
    """sickle's Header model of ``element``, checked: an identifier and a valid datestamp."""
    if element is None:
        raise ProtocolError(f"{url}: <record> without <header>")
    header = Header(element)
    identifier, datestamp = (header.identifier or "").strip(), (header.datestamp or "").strip()
    if not identifier:
        raise ProtocolError(f"{url}: <header> without <identifier>")
    checked_datestamp(datestamp, f"{url}: header {identifier!r}")
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


class _Position(TypedDict):
    """Where a page stands in its list, as every page model carries it (ListPage, RawPage)."""

    response_date: str
    token: str | None  # None on the last page
    cursor: int | None
    complete_list_size: int | None


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


class OAIClient(Component):
    """Identify and list one OAI-PMH endpoint, page by page.

    Each list method yields one page per response, carrying the token that fetches the next
    page; a new client given that token continues the same list. Requests are bounded by
    ``limits`` (:func:`~harvester.http.limits.oai_limits` of the settings; the defaults' if None).
    Without ``compressed`` it asks for responses without content coding (strategy ``didl``:
    a page kept with its carried bytes elided must be rebuildable byte for byte).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        limits: OAILimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = utcnow,
        rng: random.Random | None = None,
        session: requests.Session | None = None,
        compressed: bool = True,
    ) -> None:
        limits = limits or oai_limits(defaults())
        self.endpoint = endpoint
        # A session given is used as it is; else kept-alive connections, a session where the
        # environment asks for requests (harvester.oai.connectiontransport).
        self._transport: Transport = (
            SessionTransport(session) if session is not None else kept_alive()
        )
        self._own_session = session is None
        coding = ACCEPT_ENCODING if compressed else "identity"
        http = Http(self._transport, limits, sleep, clock, rng or random.Random(), coding)
        self.sickle = SafeSickle(endpoint, http)

    def identify(self) -> EndpointInfo:
        """The repository's self-description (§4.2), what is usable of it
        (:func:`~harvester.oai.identify.endpoint_info`)."""
        response = self.sickle.harvest(verb="Identify")
        return endpoint_info(response.xml, self.endpoint, response.exchange.url)

    def list_metadata_formats(self) -> tuple[str, ...]:
        """The metadataPrefixes the repository offers (§4.4), read by our own parsing, under
        the lists' guard should it hand out resumption tokens; a format without a
        ``<metadataPrefix>`` is warned about and left out. Empty for noMetadataFormats."""
        found: list[str] = []
        try:
            for response, _resumption in self._pages("ListMetadataFormats", {}):
                url = response.exchange.url
                for element in response.xml.iterfind(_FORMATS):
                    prefix = (element.findtext(_OAI + "metadataPrefix") or "").strip()
                    if not prefix:
                        log.warning("%s: a <metadataFormat> without <metadataPrefix>", url)
                    found.append(prefix)
        except NoMetadataFormats:
            return ()
        return tuple(dict.fromkeys(p for p in found if p))

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
        provider refuses a token (restart from the saved datestamp). A header without an
        identifier or with a bad datestamp is left out of ``headers`` and named in ``broken``:
        the caller judges what it means.
        """
        args = _list_args(metadata_prefix, from_, until, set_spec, resumption_token)
        for response, position in self._pages("ListIdentifiers", args):
            url = response.exchange.url
            headers, broken = [], []
            for element in response.xml.iterfind(f"{_OAI}ListIdentifiers/{_OAI}header"):
                try:
                    headers.append(_listed_header(element, url))
                except ProtocolError as exc:
                    broken.append(str(exc))
            yield ListPage(headers=tuple(headers), broken=tuple(broken), **position)

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
        for response, position in self._pages("ListRecords", args):
            url = response.exchange.url
            elements = response.xml.iterfind(f"{_OAI}ListRecords/{_OAI}record")
            records = (RawRecord(_listed_header(e.find(_OAI + "header"), url), e) for e in elements)
            yield RawPage(exchange=response.exchange, records=tuple(records), **position)

    def _pages(
        self, verb: str, args: dict[str, str]
    ) -> Iterator[tuple[SafeOAIResponse, _Position]]:
        """The resumption loop (§3.5): request, yield the page and where it stands, follow its
        token.

        Each page is judged by a :class:`ListGuard` before it is yielded: a list that would
        not end raises ProtocolError instead.
        """
        guard = ListGuard()
        while True:
            response = self.sickle.harvest(verb=verb, **args)
            resumption = _resumption(response, verb)
            identifiers = (e.text or "" for e in response.xml.iterfind(_IDENTIFIERS[verb]))
            guard.check(
                response.exchange.url,
                identifiers,
                resumption.token,
                resumption.complete_list_size,
            )
            position = _Position(
                response_date=response.response_date,
                token=resumption.token,
                cursor=resumption.cursor,
                complete_list_size=resumption.complete_list_size,
            )
            yield response, position
            if resumption.token is None:
                return
            args = {"resumptionToken": resumption.token}

    def close(self) -> None:
        """Release the HTTP session if this client made it."""
        if self._own_session:
            self._transport.close()


def probe(
    site_url: str, *, paths: tuple[str, ...] = ("/oai", "/modoai"), **client_kwargs: Any
) -> EndpointInfo | None:
    """The first of ``site_url + path`` that answers a well-formed Identify, or None.

    Anything else at a path (404, HTML, garbage, a timeout) means: try the next; but a path
    that answers OAI-PMH without a usable Identify raises :class:`UnusableEndpoint` (it is
    the endpoint, broken: neither another path nor a crawl is what was meant).
    """
    base = site_url.rstrip("/")
    for path in paths:
        endpoint = base + path
        with OAIClient(endpoint, **client_kwargs) as client:
            try:
                return client.identify()
            except (OAIError, EnvelopeError) as exc:
                raise UnusableEndpoint(
                    f"{endpoint} answers OAI-PMH, but its Identify is unusable: {exc}"
                ) from None
            except HarvestError as exc:
                log.info("no OAI-PMH endpoint at %s: %s", endpoint, exc)
    return None
