"""ResourceSync documents as bytes (ANSI/NISO Z39.99-2017): sans-IO, like ``server_module.oai``.

Every document is a sitemap (sitemaps.org 0.9) with the ``rs:`` extension: a ``urlset`` for a
Source Description, Capability List, Resource List or Change List, a ``sitemapindex`` for a
list split into parts (§10.2: a sitemap holds at most 50,000 URLs). Each says what it is in
``<rs:md capability="..."/>`` and links to its parent with ``<rs:ln rel="up"/>`` (§8, §9).
Entries carry ``lastmod``, ``rs:md`` ``length``, ``type``, ``hash`` and, in a Change List,
``change`` and ``datetime`` (§7, §12).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from lxml import etree

SM_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
RS_NS = "http://www.openarchives.org/rs/terms/"
_SM = "{" + SM_NS + "}"
_RS = "{" + RS_NS + "}"
NSMAP = {None: SM_NS, "rs": RS_NS}
MAX_ENTRIES = 50_000  # sitemaps.org: URLs per sitemap


def w3c(seconds: float) -> str:
    """A W3C datetime in UTC to the second (resync's and the spec's ``Z`` form).

    >>> w3c(0), w3c(1700000000.9)
    ('1970-01-01T00:00:00Z', '2023-11-14T22:13:20Z')
    """
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``<url>``: a resource, or (with ``change``) one change of it; the ledger keeps
    them (:mod:`server_module.resourcesync.ledger`). Digests are in lower-case hex."""

    loc: str
    lastmod: int | None = None  # seconds
    length: int | None = None
    mime: str | None = None
    sha1: str | None = None
    sha256: str | None = None
    md5: str | None = None
    change: str | None = None  # created | updated | deleted
    at: int | None = None  # the change's datetime, seconds
    capability: str | None = None  # in a Source Description or Capability List

    @property
    def hashes(self) -> str | None:
        """The ``rs:md hash`` value: ``md5:… sha-1:… sha-256:…`` (resync's order)."""
        pairs = (("md5", self.md5), ("sha-1", self.sha1), ("sha-256", self.sha256))
        return " ".join(f"{name}:{value}" for name, value in pairs if value) or None


@dataclass(frozen=True, slots=True, kw_only=True)
class Times:
    """The times an ``rs:md`` carries, in seconds: when a list was made (``at``,
    ``completed``), or the interval a change list covers (``from``, ``until``)."""

    at: int | None = None
    completed: int | None = None
    from_: int | None = None
    until: int | None = None

    def md(self) -> dict[str, str]:
        """The attributes of those given, as W3C datetimes."""
        times = {"at": self.at, "completed": self.completed}
        times |= {"from": self.from_, "until": self.until}
        return {name: w3c(value) for name, value in times.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Part(Times):
    """One ``<sitemap>`` of an index: a part of a split list, with its own interval."""

    loc: str


@dataclass(frozen=True, slots=True)
class Head(Times):
    """The document's own ``rs:md`` and ``rs:ln rel="up"``."""

    capability: str
    up: str | None = None
    describedby: str | None = None
    index: str | None = None  # a part's index


def urlset(head: Head, entries: Iterable[Entry]) -> bytes:
    """A ``urlset`` document."""
    root = _root("urlset", head)
    for entry in entries:
        _url(root, entry)
    return _serialise(root)


def sitemapindex(head: Head, parts: Iterable[Part]) -> bytes:
    """A ``sitemapindex`` of a list's parts."""
    root = _root("sitemapindex", head)
    for part in parts:
        element = etree.SubElement(root, _SM + "sitemap")
        etree.SubElement(element, _SM + "loc").text = part.loc
        _md(element, part.md())
    return _serialise(root)


def _root(tag: str, head: Head) -> etree._Element:
    root = etree.Element(_SM + tag, nsmap=NSMAP)  # type: ignore[arg-type]
    if head.describedby:
        _ln(root, "describedby", head.describedby)
    if head.up:
        _ln(root, "up", head.up)
    if head.index:
        _ln(root, "index", head.index)
    _md(root, {"capability": head.capability, **head.md()})
    return root


def _url(root: etree._Element, entry: Entry) -> None:
    element = etree.SubElement(root, _SM + "url")
    etree.SubElement(element, _SM + "loc").text = entry.loc
    if entry.lastmod is not None:
        etree.SubElement(element, _SM + "lastmod").text = w3c(entry.lastmod)
    md: dict[str, str] = {}
    if entry.capability:
        md["capability"] = entry.capability
    if entry.change:
        md["change"] = entry.change
    if entry.at is not None:
        md["datetime"] = w3c(entry.at)
    if entry.hashes:
        md["hash"] = entry.hashes
    if entry.length is not None:
        md["length"] = str(entry.length)
    if entry.mime:
        md["type"] = entry.mime
    if md:
        _md(element, md)


def _md(parent: etree._Element, attributes: dict[str, str]) -> None:
    element = etree.SubElement(parent, _RS + "md")
    for name, value in attributes.items():
        element.set(name, value)


def _ln(parent: etree._Element, rel: str, href: str) -> None:
    element = etree.SubElement(parent, _RS + "ln")
    element.set("rel", rel)
    element.set("href", href)


def _serialise(root: etree._Element) -> bytes:
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))
