"""What a landing page points at: its ``citation_pdf_url`` meta tags and its Signposting.

DSpace, EPrints and OJS publish the full text's URL in Highwire Press meta tags
(``<meta name="citation_pdf_url" content="…">``); FAIR Signposting (signposting.org) names an
item's files with ``Link: <…>; rel="item"`` and its persistent identifier with
``rel="cite-as"``, in the HTTP header or as ``<link>`` elements. The page is hostile input:
stdlib's :class:`html.parser.HTMLParser` reads it (no entities resolved, no network), and at
most :data:`MAX_LINKS` links are taken from one page. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html.parser import HTMLParser
from urllib.parse import urljoin

from harvester.records.metadatalinks import FILE, LANDING, Link

MAX_LINKS = 100
SIGNPOSTS = {"item": FILE, "cite-as": LANDING}

# One link-value of RFC 8288: <target> then ;-separated parameters up to the next comma.
_LINK_VALUE = re.compile(r'<([^>]*)>((?:\s*;\s*[\w*-]+\s*(?:=\s*(?:"[^"]*"|[^;,]*))?)*)')
_REL = re.compile(r';\s*rel\s*=\s*(?:"([^"]*)"|([^;,\s]+))', re.IGNORECASE)


def signposting(headers: Iterable[tuple[str, str]], base_url: str) -> list[Link]:
    """The ``rel="item"`` and ``rel="cite-as"`` targets of the ``Link`` header fields.

    >>> signposting([("Link", '<a.pdf>; rel="item"; type="application/pdf", '
    ...              '<https://doi.org/10.1/x>; rel=cite-as, </>; rel="author"')], "http://h/p/")
    [Link(url='http://h/p/a.pdf', kind='file'), Link(url='https://doi.org/10.1/x', kind='landing')]
    """
    links: list[Link] = []
    for name, value in headers:
        if name.lower() != "link":
            continue
        for match in _LINK_VALUE.finditer(value):
            rel = _REL.search(match.group(2))
            rels = (rel.group(1) or rel.group(2) or "").lower().split() if rel else []
            target = match.group(1)
            links += [_resolved(target, base_url, SIGNPOSTS[r]) for r in rels if r in SIGNPOSTS]
    return _bounded(links)


def page_links(html: bytes, base_url: str, charset: str | None = None) -> list[Link]:
    """The ``citation_pdf_url`` meta tags and Signposting ``<link>`` elements of a page.

    >>> page_links(b'<html><head><meta name="citation_pdf_url" content="/f/1.pdf">'
    ...            b'<link rel="item" href="data.csv"></head></html>', "http://h/i/1")
    [Link(url='http://h/f/1.pdf', kind='file'), Link(url='http://h/i/data.csv', kind='file')]
    """
    parser = _LandingParser(base_url)
    try:
        parser.feed(html.decode(charset or "utf-8", errors="replace"))
        parser.close()
    except (AssertionError, LookupError):  # HTMLParser's own complaints about broken markup
        pass
    return _bounded(parser.links)


class _LandingParser(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.links: list[Link] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self.links) > MAX_LINKS:
            return
        values = {k.lower(): (v or "").strip() for k, v in attrs}
        if tag == "base" and values.get("href"):
            self.base_url = urljoin(self.base_url, values["href"])
        elif tag == "meta" and values.get("name", "").lower() == "citation_pdf_url":
            self._add(values.get("content", ""), FILE)
        elif tag == "link":
            for rel in values.get("rel", "").lower().split():
                if rel in SIGNPOSTS:
                    self._add(values.get("href", ""), SIGNPOSTS[rel])

    def _add(self, target: str, kind: str) -> None:
        if target:
            self.links.append(_resolved(target, self.base_url, kind))


def _resolved(target: str, base_url: str, kind: str) -> Link:
    return Link(urljoin(base_url, target.strip()), kind)


def _bounded(links: list[Link]) -> list[Link]:
    unique: dict[str, Link] = {}
    for link in links:
        if link.url.startswith(("http://", "https://")):
            unique.setdefault(link.url, link)
    return list(unique.values())[:MAX_LINKS]
