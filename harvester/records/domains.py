"""Which linked resources an ingest may fetch: the repository's registrable domain, or more.

By default a link is in scope when its host has the same registrable domain (the public
suffix plus one label, as the Public Suffix List defines it) as the endpoint's host, so
``repo.example.ac.uk`` may fetch from ``files.example.ac.uk``. An IP address or a single-label
host is its own registrable domain. ``--linked-scope`` widens it: a domain (its subdomains
included), or ``*`` for any host. The list is the copy bundled with ``tldextract``, never
fetched.
"""

from __future__ import annotations

from functools import cache
from urllib.parse import urlsplit

import tldextract

ANY = "*"


@cache
def _extractor() -> tldextract.TLDExtract:
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def registrable_domain(host: str) -> str:
    """``host``'s registrable domain, lower-cased; the host itself when it has none.

    >>> registrable_domain("Files.Repo.Example.ac.uk"), registrable_domain("127.0.0.1")
    ('example.ac.uk', '127.0.0.1')
    """
    host = host.lower().rstrip(".")
    parts = _extractor()(host)
    return parts.top_domain_under_public_suffix or host


class LinkScope:
    """Whether a URL may be fetched as a linked resource of the repository at ``endpoint``."""

    def __init__(self, endpoint: str, widen: tuple[str, ...] = ()) -> None:
        self.domain = registrable_domain(urlsplit(endpoint).hostname or "")
        self.any = ANY in widen
        self.extra = tuple(d.lower().strip(".") for d in widen if d != ANY)

    def allows(self, url: str) -> bool:
        """True for an http(s) URL in the repository's domain or one of the widened ones.

        >>> scope = LinkScope("https://repo.example.org/oai", ("cdn.example.net",))
        >>> [scope.allows(u) for u in ("http://files.example.org/a", "http://x.cdn.example.net/",
        ...                            "https://evil.example/", "ftp://repo.example.org/")]
        [True, True, False, False]
        """
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host:
            return False
        if self.any or registrable_domain(host) == self.domain:
            return True
        return any(host == d or host.endswith("." + d) for d in self.extra)
