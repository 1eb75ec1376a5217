"""Link extraction: the URLs that one HTTP response points to.

Links are reported in the order they occur, headers first:

1. ``Location`` (RFC 9110 §10.2.2) and ``Link`` headers (RFC 8288 §3, several links to a
   header, ``rel`` tokens read from the first ``rel`` parameter), and the non-standard but
   widely obeyed ``Refresh`` header, read as a ``<meta http-equiv=refresh>``;
2. an HTML body (``text/html``, ``application/xhtml+xml``, or no type and a body that sniffs
   as HTML): the URL attributes in ``_URL_ATTRIBUTES``, ``srcset``
   candidates (HTML, "parse a srcset attribute"), ``<meta http-equiv=refresh>`` (HTML, "shared
   declarative refresh steps"), and CSS in ``<style>`` elements and ``style`` attributes. The
   first ``<base href>`` is the base for everything after it (the HTML standard would apply it
   to the elements before it too; pages put it first in ``<head>``);
3. a CSS body (``text/css``): ``url(...)`` and ``@import`` (CSS Syntax 3 §4.3.5-§4.3.6,
   approximated by one regular expression that also skips comments and other strings).

Every ``Link.url`` is canonical (``urls.canonicalize``). Values that cannot be made an
http(s) URL (``javascript:``, ``mailto:``, ``data:``, a broken IPv6 literal) and empty values
are skipped silently. A URL is reported once, as its first occurrence; with
``follow_nofollow=False`` the ``rel=nofollow`` occurrences are dropped before that, so a URL
that is also linked without ``nofollow`` survives.

Hostile bodies are bounded: only the first ``max_bytes`` (5 MiB) are read, and lxml parses in
recovery mode. Whether a body is HTML, CSS or neither (binary included), and how its bytes
become text, is ``bodytext.body_text``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import NamedTuple

from lxml import etree

from harvester.crawl.bodytext import body_text
from harvester.crawl.cssurls import css_urls
from harvester.crawl.urls import canonicalize
from harvester.http.exchange import HttpExchange

__all__ = ["MAX_BODY_BYTES", "Link", "extract_links", "response_links"]

MAX_BODY_BYTES = 5 * 1024 * 1024
LINKED_TYPES = ("text/html", "application/xhtml+xml", "text/css")  # bodies read for links

# Elements whose attributes hold one URL each. ``a`` and ``area`` navigate, ``link`` depends
# on its rel; everything else is a page requisite.
_URL_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "a": ("href",),
    "area": ("href",),
    "link": ("href",),
    "img": ("src",),
    "script": ("src",),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "source": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
}
_SRCSET_ELEMENTS = frozenset({"img", "source"})
_NAVIGATION_ELEMENTS = frozenset({"a", "area"})
_REL_ELEMENTS = frozenset({"a", "area", "link"})
# Link relations whose target the page itself uses, and those that name only an origin.
_REQUISITE_RELS = frozenset(
    {"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"}
    | {"preload", "modulepreload", "manifest"}
)
_ORIGIN_RELS = frozenset({"dns-prefetch", "preconnect"})
_LINKING_ELEMENTS = frozenset({*_URL_ATTRIBUTES, "base", "meta", "style"})


class Link(NamedTuple):
    """One URL a response points to (a named tuple: a crawled page makes dozens, cheaper so
    than with a dataclass; the crawl's frontier is handed only their URLs).

    ``source`` says where it was found: ``element/attribute`` (``a/href``, ``img/srcset``,
    ``meta/refresh``), ``css/url`` or ``css/import`` (in a style sheet, a ``<style>`` element
    or a ``style`` attribute), ``header/location``, ``header/link`` or ``header/refresh``.
    ``nofollow`` comes from ``rel=nofollow`` (on ``a``, ``area``, ``link`` and in ``Link``).
    ``embed`` marks page requisites (images, scripts, style sheets, frames, media, and
    ``link``/``Link`` with a requisite relation such as ``stylesheet`` or ``icon``) as against
    navigation (``a``, ``area``, other relations, refreshes, ``Location``).
    """

    url: str
    source: str
    nofollow: bool = False
    embed: bool = False


class _Candidate(NamedTuple):
    """A link as found, before its URL is resolved and canonicalised."""

    value: str
    base: str
    source: str
    nofollow: bool = False
    embed: bool = False


def extract_links(
    body: bytes,
    base_url: str,
    content_type: str | None,
    headers: Sequence[tuple[str, str]] = (),
    *,
    follow_nofollow: bool = True,
    max_bytes: int = MAX_BODY_BYTES,
) -> list[Link]:
    """The links of one response, canonical, de-duplicated and in document order.

    ``base_url`` is the URL the response came from; ``headers`` are its (name, value) pairs.

    >>> html = b'<a href="b#top">B</a><img srcset="i.png 1x, j.png 2x"><a href="mailto:x@y">'
    >>> headers = [("Link", "</s.css>; rel=stylesheet")]
    >>> for link in extract_links(html, "http://h/a/", "text/html", headers):
    ...     print(link.url, link.source, link.embed)
    http://h/s.css header/link True
    http://h/a/b a/href False
    http://h/a/i.png img/srcset True
    http://h/a/j.png img/srcset True
    """
    found = [*_header_candidates(headers, base_url)]
    found += _body_candidates(body[:max_bytes], base_url, content_type)
    if not follow_nofollow:
        found = [candidate for candidate in found if not candidate.nofollow]
    return _links(found)


def response_links(result: HttpExchange, *, follow_nofollow: bool) -> list[Link]:
    """The links a crawl follows from ``result``: a redirect's, and an HTML or CSS page's."""
    ctype = (result.header("Content-Type") or "").split(";")[0].strip().lower()
    if ctype not in LINKED_TYPES and not 300 <= result.status < 400:
        return []
    return extract_links(
        result.body, result.url, ctype, result.response_headers, follow_nofollow=follow_nofollow
    )


def _links(candidates: Iterable[_Candidate]) -> list[Link]:
    """A link for the first candidate of each canonical http(s) URL, in order."""
    tried: dict[tuple[str, str], str | None] = {}  # pages repeat their links
    seen: set[str] = set()
    links: list[Link] = []
    for candidate in candidates:
        key = (candidate.value, candidate.base)
        if key in tried:
            continue  # an earlier candidate made the same URL, or none
        url = tried[key] = _canonical_or_none(candidate.value, candidate.base)
        if url is not None and url not in seen:
            seen.add(url)
            links.append(Link(url, candidate.source, candidate.nofollow, candidate.embed))
    return links


def _canonical_or_none(value: str, base: str) -> str | None:
    if not value.strip():
        return None  # an empty src or href is a placeholder, not a link to the page itself
    if value.lstrip(_EDGE_JUNK)[:1] in ("", "?", "#"):
        return _canonical_uncached(value, base)  # resolved against the base's path and query
    return _canonical_in(value, _directory(base))


def _canonical_uncached(value: str, base: str) -> str | None:
    try:
        return canonicalize(value, base)
    except ValueError:
        return None


# Pages repeat their neighbours' links (menus, headers, the same relative paths): a
# reference that is not only a query or a fragment resolves against its base's scheme,
# authority and directory alone (RFC 3986 §5.2.2, §5.2.3), so the result is kept per
# (reference, directory) across pages.
_canonical_in = lru_cache(maxsize=16384)(_canonical_uncached)
_EDGE_JUNK = "".join(chr(code) for code in range(0x21))  # as urls.canonicalize strips them


@lru_cache(maxsize=64)  # a page's candidates share its base: made once a page
def _directory(base: str) -> str:
    """``base`` without its query and fragment, up to its path's last ``/``.

    >>> _directory("http://h/a/b.html?x=/y#z"), _directory("http://h")
    ('http://h/a/', 'http://h')
    """
    cut = len(base)
    for mark in ("?", "#"):
        if (at := base.find(mark, 0, cut)) >= 0:
            cut = at
    after_authority = base.find("/", base.find("//") + 2, cut)
    if after_authority < 0:
        return base[:cut]  # no path: the authority alone
    return base[: base.rfind("/", after_authority, cut) + 1]


# Headers


# Not requests.utils.parse_header_links (nor aiohttp's ClientResponse.links): they split link
# values inside quoted strings, keep the last rel rather than the first and match parameter
# names case-sensitively (see test_awkward_link_headers).
_LINK_VALUE = re.compile(r'<(?P<target>[^>]*)>(?P<params>(?:"(?:[^"\\]|\\.)*+"|[^",<])*+)', re.S)
_LINK_PARAM = re.compile(
    r';\s*(?P<name>[^\s=;,]+)\s*(?:=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*+)"|(?P<token>[^\s;,]*)))?',
    re.S,
)
_QUOTED_PAIR = re.compile(r"\\(.)", re.S)


def _header_candidates(headers: Sequence[tuple[str, str]], base: str) -> Iterator[_Candidate]:
    for name, value in headers:
        field = name.strip().lower()
        if field == "location":
            yield _Candidate(value, base, "header/location")
        elif field == "refresh" and (url := _refresh_url(value)) is not None:
            yield _Candidate(url, base, "header/refresh")
        elif field == "link":
            for match in _LINK_VALUE.finditer(value):
                rels = _rel_param(match["params"])
                if found := _rel_candidate(match["target"], base, "header/link", rels, True):
                    yield found


def _rel_param(params: str) -> frozenset[str]:
    """The tokens of the first ``rel`` parameter (RFC 8288 §3.3 ignores any later one).

    >>> sorted(_rel_param('; title="a, b"; REL="Next nofollow"; rel=prev'))
    ['next', 'nofollow']
    """
    for match in _LINK_PARAM.finditer(params):
        if match["name"].lower() == "rel":
            quoted = match["quoted"]
            value = match["token"] if quoted is None else _QUOTED_PAIR.sub(r"\1", quoted)
            return frozenset((value or "").lower().split())
    return frozenset()


def _rel_candidate(
    value: str, base: str, source: str, rels: frozenset[str], rel_decides_embed: bool
) -> _Candidate | None:
    """A link with a ``rel``: ``nofollow`` marks it, and requisite relations embed it."""
    if rels and rels <= _ORIGIN_RELS:
        return None  # the target is only an origin to connect to early
    embed = bool(rels & _REQUISITE_RELS) if rel_decides_embed else False
    return _Candidate(value, base, source, "nofollow" in rels, embed)


# Bodies


def _body_candidates(body: bytes, base: str, content_type: str | None) -> list[_Candidate]:
    found = body_text(body, content_type)
    if found is None:
        return []
    if found.kind == "html":
        return list(_html_candidates(found.text, base))
    return list(_css_candidates(found.text, base))


# HTML


def _html_candidates(text: str, base_url: str) -> Iterator[_Candidate]:
    """The links of an HTML document, element by element in document order."""
    root = _parse_html(text)
    if root is None:
        return
    base, base_seen = base_url, False
    for element in root.iter(etree.Element):
        tag = element.tag
        if tag == "a" and element.get("rel") is None and element.get("style") is None:
            if (href := element.get("href")) is not None:  # most links: made here, directly
                yield _Candidate(href, base, "a/href")
            continue
        if tag in _LINKING_ELEMENTS:
            attributes = dict(element.items())
        elif (style := element.get("style")) is not None:
            attributes = {"style": style}
        else:
            continue  # most elements, skipped here rather than in a generator for speed
        if tag == "base" and not base_seen and "href" in attributes:
            base = _canonical_or_none(attributes["href"], base_url) or base_url
            base_seen = True
        yield from _element_candidates(element, tag, attributes, base)


def _parse_html(text: str) -> etree._Element | None:
    """A tolerant parse; libxml2 gets UTF-8 so that it has nothing to guess."""
    parser = etree.HTMLParser(
        encoding="utf-8",
        recover=True,
        no_network=True,
        remove_comments=True,
        remove_pis=True,
        huge_tree=True,  # deep nesting in broken pages; the input size is bounded already
        collect_ids=False,  # no table of ids, never looked up: 3 % of a documentation page
    )
    try:
        return etree.fromstring(text.encode("utf-8", "replace"), parser)
    except (etree.LxmlError, ValueError):
        return None


def _element_candidates(
    element: etree._Element, tag: str, attributes: dict[str, str], base: str
) -> Iterator[_Candidate]:
    for attribute in _URL_ATTRIBUTES.get(tag, ()):
        if (value := attributes.get(attribute)) is not None and (
            found := _attribute_candidate(tag, attribute, value, attributes, base)
        ):
            yield found
    if tag in _SRCSET_ELEMENTS and (srcset := attributes.get("srcset")):
        for url in _srcset_urls(srcset):
            yield _Candidate(url, base, f"{tag}/srcset", embed=True)
    refresh = tag == "meta" and attributes.get("http-equiv", "").strip().lower() == "refresh"
    if refresh and (target := _refresh_url(attributes.get("content", ""))) is not None:
        yield _Candidate(target, base, "meta/refresh")
    if tag == "style" and element.text:
        yield from _css_candidates(element.text, base)
    if style := attributes.get("style"):
        yield from _css_candidates(style, base)


def _attribute_candidate(
    tag: str, attribute: str, value: str, attributes: dict[str, str], base: str
) -> _Candidate | None:
    source = f"{tag}/{attribute}"
    if tag in _REL_ELEMENTS:
        rels = frozenset(attributes.get("rel", "").lower().split())
        return _rel_candidate(value, base, source, rels, tag == "link")
    return _Candidate(value, base, source, embed=tag not in _NAVIGATION_ELEMENTS)


_SRCSET_URL = re.compile(r"[\s,]*(\S*)")
_SRCSET_DESCRIPTORS = re.compile(r"(?:[^,(]|\([^)]*+\)?)*+,?")


def _srcset_urls(srcset: str) -> Iterator[str]:
    """The URLs of a ``srcset``'s image candidates; commas inside URLs survive.

    >>> list(_srcset_urls(" a.png 1x,b.png,, c,d.png 100w, f.png (1, 2), g.png"))
    ['a.png', 'b.png', 'c,d.png', 'f.png', 'g.png']
    """
    position = 0
    while (match := _SRCSET_URL.match(srcset, position)) and match[1]:
        url, position = match[1], match.end()
        if url.endswith(","):
            url = url.rstrip(",")  # a candidate without descriptors
        elif descriptors := _SRCSET_DESCRIPTORS.match(srcset, position):
            position = descriptors.end()
        if url:
            yield url


_REFRESH = re.compile(r"\s*[0-9.]+(?:\s*[;,]|\s)\s*(?P<rest>.*)", re.S)
_REFRESH_URL_PREFIX = re.compile(r"\Aurl\s*=\s*", re.I)


def _refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh>`` content, if it has one.

    >>> _refresh_url("5; URL='/next'"), _refresh_url("0,url=a b"), _refresh_url("3;/x")
    ('/next', 'a b', '/x')
    >>> _refresh_url("5"), _refresh_url("5abc"), _refresh_url("url=/x")
    (None, None, None)
    """
    match = _REFRESH.match(content)
    if match is None:
        return None
    url = _REFRESH_URL_PREFIX.sub("", match["rest"], count=1).strip()
    if url[:1] in ("'", '"'):
        url = url[1:].partition(url[0])[0]
    return url or None


def _css_candidates(css: str, base: str) -> Iterator[_Candidate]:
    """Each ``url(...)`` and ``@import`` target of a style sheet (:mod:`~harvester.crawl.cssurls`)
    as a link candidate."""
    for value, source in css_urls(css):
        yield _Candidate(value, base, source, embed=True)
