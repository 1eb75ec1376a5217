"""Extra seeds from the site's own lists of URLs: ``Sitemap:`` lines in robots.txt and
``/sitemap.xml`` (sitemaps.org protocol 0.9), gzip files and sitemap indexes included.

They partly solve the counting problem even without OAI-PMH: a sitemap can name pages that
no link reaches. Every sitemap is untrusted input: fetched through the harvester's one HTTP
seam with its limits, decompressed with a bound, parsed with entities and the network off,
and the walk through indexes is bounded in depth and count.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterable
from urllib.parse import urljoin

from lxml import etree

from harvester.exceptions import HarvestError
from harvester.http.fetch import Fetcher

log = logging.getLogger(__name__)
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
MAX_SITEMAPS = 50
MAX_URLS = 50_000  # per sitemap, as the protocol allows
MAX_INFLATED = 50 * 1024 * 1024  # the protocol's limit for an uncompressed sitemap


async def sitemap_urls(
    fetcher: Fetcher, site_url: str, allowed: Callable[[str], bool]
) -> list[str]:
    """Every page URL the site's sitemaps name, in the order found (duplicates dropped).

    Only sitemaps whose URL is ``allowed`` are read: robots.txt and sitemap indexes may name
    any host. The page URLs are returned unfiltered; the caller's scope judges them.
    """
    todo = await _starting_points(fetcher, site_url)
    seen_maps: set[str] = set()
    pages: dict[str, None] = {}
    while todo and len(seen_maps) < MAX_SITEMAPS:
        url = todo.pop(0)
        if url in seen_maps:
            continue
        seen_maps.add(url)
        if not allowed(url):
            log.info("not reading the sitemap %s: not on the crawl's hosts", url)
            continue
        children, found = await _read(fetcher, url)
        todo.extend(children)
        pages.update(dict.fromkeys(found))
    if pages:
        log.info("sitemaps of %s name %d URLs", site_url, len(pages))
    return list(pages)


async def _starting_points(fetcher: Fetcher, site_url: str) -> list[str]:
    try:
        declared = await fetcher.robots.sitemaps(site_url)
    except HarvestError:
        declared = []
    robots = urljoin(site_url, "/robots.txt")  # Sitemap: lines may be relative to it
    return [*(urljoin(robots, u) for u in declared), urljoin(site_url, "/sitemap.xml")]


async def _read(fetcher: Fetcher, url: str) -> tuple[list[str], list[str]]:
    """(child sitemaps, page URLs) of one sitemap; nothing when it is missing or broken."""
    try:
        result = await fetcher.fetch(url)
    except HarvestError as exc:
        log.info("no sitemap at %s: %s", url, exc)
        return [], []
    if result.status != 200 or result.truncated:
        return [], []
    try:
        return parse_sitemap(inflate(result.body), url)
    except ValueError as exc:
        log.warning("ignoring the sitemap %s: %s", url, exc)
        return [], []


def inflate(body: bytes) -> bytes:
    """Gunzip a ``.xml.gz`` body, refusing to grow it past the protocol's 50 MiB.

    >>> inflate(b"<urlset/>")
    b'<urlset/>'
    """
    if not body.startswith(b"\x1f\x8b"):
        return body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = inflater.decompress(body, MAX_INFLATED + 1)
    if len(data) > MAX_INFLATED or inflater.unconsumed_tail:
        raise ValueError("the sitemap inflates past 50 MiB")
    return data


def parse_sitemap(xml: bytes, url: str) -> tuple[list[str], list[str]]:
    """(child sitemaps, page URLs) of a ``urlset`` or ``sitemapindex`` document."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError as exc:
        raise ValueError(f"not well-formed XML ({exc})") from None
    if root.tag == f"{SM}sitemapindex":
        return _locs(root.iterfind(f"{SM}sitemap/{SM}loc"), url), []
    if root.tag == f"{SM}urlset":
        return [], _locs(root.iterfind(f"{SM}url/{SM}loc"), url)
    raise ValueError(f"unexpected root element {root.tag!r}")


def _locs(elements: Iterable[etree._Element], base: str) -> list[str]:
    found = []
    for element in elements:
        if element.text and element.text.strip():
            found.append(urljoin(base, element.text.strip()))
        if len(found) >= MAX_URLS:
            break
    return found
