"""The linked resources an OAI-PMH record's metadata names: http(s) URLs, each of a kind.

A *landing* link points at a page about the item (Dublin Core ``dc:identifier`` and
``dc:relation``, DataCite ``alternateIdentifier`` and ``relatedIdentifier``); a *file* link at
a content file (MPEG-21 DIDL ``Resource@ref``, METS ``FLocat@xlink:href``, OAI-ORE
``ore:aggregates``). Only absolute http(s) URLs count; anything else (a DOI written as
``doi:…``, an ISSN, a handle) is not fetchable and is skipped. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree

LANDING = "landing"
FILE = "file"

_DC = ("http://purl.org/dc/elements/1.1/", "http://purl.org/dc/terms/")
_DIDL = "urn:mpeg:mpeg21:2002:02-DIDL-NS"
_METS = "http://www.loc.gov/METS/"
_ORE = "http://www.openarchives.org/ore/terms/"
_RDF_RESOURCE = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}resource"
_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
_DC_NAMES = ("identifier", "relation")
_DATACITE_NAMES = ("alternateIdentifier", "relatedIdentifier")


@dataclass(frozen=True)
class Link:
    """One URL a record names, and whether it is a landing page or a file."""

    url: str
    kind: str  # LANDING or FILE


def record_links(formats: Iterable[etree._Element]) -> list[Link]:
    """Every http(s) URL the metadata elements name, each once, in document order.

    >>> dc = etree.fromstring(
    ...     '<dc xmlns:dc="http://purl.org/dc/elements/1.1/">'
    ...     "<dc:identifier>https://repo.example.org/handle/1</dc:identifier>"
    ...     "<dc:identifier>doi:10.1/x</dc:identifier></dc>")
    >>> record_links([dc])
    [Link(url='https://repo.example.org/handle/1', kind='landing')]
    """
    found: dict[str, Link] = {}
    for root in formats:
        for element in root.iter(etree.Element):
            link = _link(element)
            if link is not None and link.url not in found:
                found[link.url] = link
    return list(found.values())


def _link(element: etree._Element) -> Link | None:
    qname = etree.QName(element)
    ns, name = qname.namespace or "", qname.localname
    if (ns in _DC and name in _DC_NAMES) or (name in _DATACITE_NAMES and "datacite" in ns):
        return _http(element.text, LANDING)
    if ns == _DIDL and name == "Resource":
        return _http(element.get("ref"), FILE)
    if ns == _METS and name == "FLocat":
        return _http(element.get(_XLINK_HREF), FILE)
    if ns == _ORE and name == "aggregates":
        return _http(element.get(_RDF_RESOURCE) or element.text, FILE)
    if name == "link" and element.get("rel") == _ORE + "aggregates":  # ORE in Atom
        return _http(element.get("href"), FILE)
    return None


def _http(value: str | None, kind: str) -> Link | None:
    url = (value or "").strip()
    if url.lower().startswith(("http://", "https://")) and " " not in url:
        return Link(url, kind)
    return None
