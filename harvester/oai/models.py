"""The values an OAI-PMH response is read into (spec §2.5 headers, §3.5 list pages, §4.2
Identify): frozen, checked by :mod:`harvester.oai.client` before they are made."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from harvester.http.exchange import HttpExchange

__all__ = ["OAI_NS", "EndpointInfo", "ListPage", "ListedHeader", "RawPage", "RawRecord"]

OAI_NS = "http://www.openarchives.org/OAI/2.0/"  # spec §3.2

_OAI = "{" + OAI_NS + "}"


@dataclass(frozen=True)
class EndpointInfo:
    """What an Identify response (§4.2) says about a repository.

    ``endpoint`` is the URL this client asked; ``base_url`` is what the repository claims.
    """

    endpoint: str
    base_url: str
    repository_name: str  # "" when it gave none; earliest_datestamp "" when unusable
    granularity: str
    deleted_record: str
    earliest_datestamp: str
    protocol_version: str
    compression: tuple[str, ...]


@dataclass(slots=True)
class ListedHeader:
    """One ``<header>`` of a list (§2.5): the item's identifier, datestamp and sets."""

    identifier: str
    datestamp: str
    set_specs: tuple[str, ...]
    deleted: bool


@dataclass(frozen=True)
class ListPage:
    """One ListIdentifiers response; ``token`` is None on the last page (§3.5). ``broken``
    names each header left out (no identifier, a bad datestamp)."""

    headers: tuple[ListedHeader, ...]
    response_date: str
    token: str | None
    cursor: int | None
    complete_list_size: int | None
    broken: tuple[str, ...] = ()


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

    exchange: HttpExchange
    records: tuple[RawRecord, ...]
    response_date: str
    token: str | None
    cursor: int | None
    complete_list_size: int | None
