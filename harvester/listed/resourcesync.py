"""Reading a ResourceSync source (ANSI/NISO Z39.99-2017): its complete list and its changes.

Discovery follows the spec's links (§8, §9): ``SITE/.well-known/resourcesync``, a Source
Description, names a Capability List, which names the Resource List and, if any, the Change
List. Either list may be a sitemap index of parts (§10.2, §12.2).

Every document is untrusted input, read as the OAI-PMH client reads responses
(:mod:`harvester.oai.httpclient`): bounded in size and time, retried when transient, parsed with
entities, DTDs and the network off (a DOCTYPE is refused), its root checked for the capability
expected. An index names at most ``MAX_PARTS`` parts, a document at most ``MAX_ENTRIES``
entries, and only URLs on the source's own host are taken (the sitemap authority rule, as
``resync`` applies it): a source speaks for itself alone.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

from lxml import etree

from coop_common.component import Component
from harvester.exceptions import FetchError, ProtocolError
from harvester.http.limits import OAILimits
from harvester.oai.connectiontransport import kept_alive
from harvester.oai.httpclient import Http, parse_oai_xml

log = logging.getLogger(__name__)
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
RS = "{http://www.openarchives.org/rs/terms/}"
WELL_KNOWN = "/.well-known/resourcesync"
MAX_PARTS = 1000  # parts of one list index
MAX_ENTRIES = 50_000  # entries of one document, as sitemaps allow
MAX_BYTES = 50 * 1024 * 1024  # one document, decoded (the sitemap limit)


@dataclass(frozen=True)
class ResourceSyncSource:
    """Where a source's documents are (None: it has no such list)."""

    description: str
    capability_list: str
    resource_list: str | None
    change_list: str | None


@dataclass(frozen=True)
class Listing:
    """One entry of a list: a resource (``change`` None) or one change of it."""

    url: str
    lastmod: str | None  # as YYYY-MM-DDThh:mm:ssZ
    change: str | None
    at: str | None  # the change's datetime, else its lastmod


def normalise(text: str, url: str) -> str:
    """A W3C datetime as ``YYYY-MM-DDThh:mm:ssZ`` in UTC (fractions dropped).

    >>> normalise("2024-05-10T14:30:00.25+02:00", "u")
    '2024-05-10T12:30:00Z'
    >>> normalise("2024-05-10", "u")
    '2024-05-10T00:00:00Z'
    """
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ProtocolError(f"{url}: bad W3C datetime {text[:40]!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ResourceSyncReader(Component):
    """Reads one source's documents; ``with`` it to release its HTTP session."""

    def __init__(self, site_url: str, limits: OAILimits) -> None:
        self.site_url = site_url
        self.origin = _origin(site_url)
        self.problem: str | None = None  # why discover() found none, when it did not
        self._transport = kept_alive()
        limits = replace(limits, max_bytes=min(limits.max_bytes, MAX_BYTES))
        self._http = Http(self._transport, limits, time.sleep, _utcnow, random.Random())

    def close(self) -> None:
        self._transport.close()

    # -- discovery ----------------------------------------------------------------------

    def discover(self) -> ResourceSyncSource | None:
        """The source's documents, or None when it publishes no Source Description."""
        description = urljoin(self.site_url, WELL_KNOWN)
        try:
            root = self._read(description)
        except (FetchError, ProtocolError) as exc:
            log.info("no ResourceSync source description at %s: %s", description, exc)
            self.problem = str(exc)
            return None
        caps = self._capabilities(root, description, "description")
        if not caps.get("capabilitylist"):
            log.info("%s names no capability list", description)
            return None
        cap_url = caps["capabilitylist"]
        listed = self._capabilities(self._read(cap_url), cap_url, "capabilitylist")
        return ResourceSyncSource(
            description, cap_url, listed.get("resourcelist"), listed.get("changelist")
        )

    def _capabilities(self, root: etree._Element, url: str, expected: str) -> dict[str, str]:
        """capability -> URL of the first entry of each capability a document names."""
        _check_root(root, url, expected, index_allowed=False)
        found: dict[str, str] = {}
        for element in root.iterfind(f"{SM}url"):
            loc, md = _loc(element, url), element.find(f"{RS}md")
            capability = "" if md is None else md.get("capability", "")
            if loc and capability and self._ours(loc):
                found.setdefault(capability, loc)
        return found

    # -- the lists ----------------------------------------------------------------------

    def entries(self, url: str, capability: str) -> tuple[str | None, Iterator[Listing]]:
        """The list's own ``at`` (a Resource List's) and its entries, parts followed."""
        root = self._read(url)
        is_index = _check_root(root, url, capability, index_allowed=True)
        at = _md_time(root, "at", url)
        if not is_index:
            return at, self._listings(root, url)
        parts = [loc for e in root.iterfind(f"{SM}sitemap") if (loc := _loc(e, url))]
        if len(parts) > MAX_PARTS:
            raise ProtocolError(f"{url}: an index of more than {MAX_PARTS} parts")
        return at, self._parts([p for p in parts if self._ours(p)], capability)

    def _parts(self, parts: list[str], capability: str) -> Iterator[Listing]:
        for part in parts:
            root = self._read(part)
            _check_root(root, part, capability, index_allowed=False)
            yield from self._listings(root, part)

    def _listings(self, root: etree._Element, url: str) -> Iterator[Listing]:
        for count, element in enumerate(root.iterfind(f"{SM}url")):
            if count >= MAX_ENTRIES:
                raise ProtocolError(f"{url}: more than {MAX_ENTRIES} entries")
            loc = _loc(element, url)
            if not loc or not self._ours(loc):
                continue
            text = element.findtext(f"{SM}lastmod")
            lastmod = normalise(text, url) if text else None
            md = element.find(f"{RS}md")
            change = None if md is None else md.get("change")
            stamp = None if md is None else md.get("datetime")
            at = normalise(stamp, url) if stamp else lastmod
            yield Listing(loc, lastmod, change, at)

    def _read(self, url: str) -> etree._Element:
        exchange = self._http.get(url, {})
        body = exchange.decoded if exchange.decoded is not None else exchange.body
        return parse_oai_xml(body, url)

    def _ours(self, url: str) -> bool:
        return _origin(url) == self.origin


def _check_root(root: etree._Element, url: str, capability: str, *, index_allowed: bool) -> bool:
    """Whether the document is an index; ProtocolError unless it is the capability asked."""
    is_index = root.tag == f"{SM}sitemapindex"
    if root.tag != f"{SM}urlset" and not (index_allowed and is_index):
        raise ProtocolError(f"{url}: not a ResourceSync {capability} (root {root.tag!r})")
    md = root.find(f"{RS}md")
    found = None if md is None else md.get("capability")
    if found != capability:
        raise ProtocolError(f"{url}: capability {found!r}, expected {capability!r}")
    return is_index


def _md_time(root: etree._Element, name: str, url: str) -> str | None:
    md = root.find(f"{RS}md")
    value = None if md is None else md.get(name)
    return normalise(value, url) if value else None


def _loc(element: etree._Element, base: str) -> str | None:
    text = element.findtext(f"{SM}loc")
    if not text or not text.strip():
        return None
    loc = urljoin(base, text.strip())
    return loc if urlsplit(loc).scheme in ("http", "https") else None


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def _utcnow() -> datetime:
    return datetime.now(UTC)
