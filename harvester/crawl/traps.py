"""Crawler traps: canonical URLs that look like an endless space rather than resources.

``check_trap`` applies ``TrapRules`` to one URL (its length, its path's depth and repeated
segments, its number of query parameters); ``QueryVariantCounter`` bounds the query-string
variants of one path, which only shows across URLs (calendars, faceted search). Both expect
canonical URLs (``urls.canonicalize``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

__all__ = ["QueryVariantCounter", "TrapRules", "check_trap"]


@dataclass(frozen=True)
class TrapRules:
    """Limits beyond which a URL is taken for a crawler trap rather than a resource.

    ``max_repeated_segments``: one path segment may occur at most this often in a path, so
    ``/a/b/a/b/a/b`` passes and ``/a/b/a/b/a/b/a`` does not. ``max_query_variants_per_path``
    is for ``QueryVariantCounter``: distinct query strings per scheme, host, port and path.
    """

    max_url_length: int = 2048
    max_path_depth: int = 16
    max_repeated_segments: int = 3
    max_query_params: int = 10
    max_query_variants_per_path: int = 50


def check_trap(url: str, rules: TrapRules) -> str | None:
    """Why the canonical ``url`` looks like a trap, for the log; ``None`` if it does not.

    >>> rules = TrapRules()
    >>> check_trap("http://example.com/a/b?page=2", rules) is None
    True
    >>> check_trap("http://example.com/a/b/a/b/a/b/a/", rules)
    "path segment 'a' occurs 4 times (limit 3)"
    """
    if len(url) > rules.max_url_length:
        return f"URL is {len(url)} characters long (limit {rules.max_url_length})"
    # A canonical URL has no fragment, and its path starts at the first "/" after "//".
    rest, _mark, query = url.partition("?")
    start = rest.find("/", rest.find("//") + 2)
    path = rest[start:] if start >= 0 else ""
    return _path_trap(path, rules) or _query_trap(query, rules)


def _path_trap(path: str, rules: TrapRules) -> str | None:
    """The depth and repetition rules; empty segments count (``////`` is a trap too).

    >>> _path_trap("/" + "x/" * 17, TrapRules(max_repeated_segments=20))
    'path is 17 segments deep (limit 16)'
    """
    segments = path.split("/")[1:]
    if segments and not segments[-1]:
        segments.pop()  # a trailing slash adds no depth
    if len(segments) > rules.max_path_depth:
        return f"path is {len(segments)} segments deep (limit {rules.max_path_depth})"
    if len(segments) <= rules.max_repeated_segments:
        return None  # too few segments for any to repeat too often
    for segment, count in Counter(segments).most_common(1):
        if count > rules.max_repeated_segments:
            limit = rules.max_repeated_segments
            return f"path segment {segment!r} occurs {count} times (limit {limit})"
    return None


def _query_trap(query: str, rules: TrapRules) -> str | None:
    """The parameter-count rule.

    >>> _query_trap("&".join(f"p{n}=1" for n in range(11)), TrapRules())
    'query has 11 parameters (limit 10)'
    """
    count = sum(1 for param in query.split("&") if param)
    if count > rules.max_query_params:
        return f"query has {count} parameters (limit {rules.max_query_params})"
    return None


class QueryVariantCounter:
    """Distinct query strings seen per path, to bound unbounded query spaces such as calendars.

    ``check`` records a canonical URL's query string and refuses a new one once its path
    (with scheme, host and port) already has ``limit`` of them; query strings seen before
    are still admitted. URLs without a query are not counted. Memory grows with the number
    of paths times at most ``limit`` query strings.

    >>> counter = QueryVariantCounter(limit=2)
    >>> [counter.check(f"http://h/cal?day={day}") for day in (1, 2, 1)]
    [None, None, None]
    >>> counter.check("http://h/cal?day=3")
    'more than 2 query variants of http://h/cal'
    >>> counter.check("http://h/cal"), counter.check("http://h/other?day=3")
    (None, None)
    """

    def __init__(self, limit: int = TrapRules.max_query_variants_per_path) -> None:
        self.limit = limit
        self._variants: dict[str, set[str]] = {}

    def check(self, url: str) -> str | None:
        """Count ``url``'s query variant; the reason it is refused, or ``None``."""
        where, mark, query = url.partition("?")
        if not mark:
            return None
        variants = self._variants.setdefault(where, set())
        if query in variants:
            return None
        if len(variants) >= self.limit:
            return f"more than {self.limit} query variants of {where}"
        variants.add(query)
        return None
