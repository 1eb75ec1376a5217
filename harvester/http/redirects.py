"""Redirects (RFC 9110 §15.4): where a 3xx points, and which hops end a chain.

:func:`redirect_target` reads a 3xx's ``Location`` as an absolute http(s) URL;
:func:`check_hop` ends a chain at a loop or past a limit; :func:`method_after` is the method
the next hop is sent with. The fetcher (:mod:`harvester.http.fetch`) follows redirects with these,
and :mod:`harvester.listed.chain` fetches a listed URL's chain hop by hop.
"""

from __future__ import annotations

from yarl import URL

from harvester.exceptions import PermanentFetchError
from harvester.http.exchange import HttpExchange, Redirect

__all__ = ["REDIRECT_STATUSES", "check_hop", "method_after", "redirect_target"]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def redirect_target(result: HttpExchange) -> str | None:
    """The absolute URL a 3xx points to, without its fragment; None if not a redirect."""
    if result.status not in REDIRECT_STATUSES:
        return None
    location = result.header("Location")
    if not location:
        return None
    try:
        target = URL(result.url).join(URL(location.strip())).with_fragment(None)
    except ValueError as exc:
        raise PermanentFetchError(f"bad Location {location!r}", result.status) from exc
    if target.scheme not in ("http", "https"):
        raise PermanentFetchError(f"redirect to non-HTTP {location!r}", result.status)
    return str(target)


def check_hop(url: str, redirects: list[Redirect], limit: int) -> None:
    """Raise :class:`PermanentFetchError` if the last of ``redirects`` (followed from ``url``)
    closes a loop or goes past ``limit`` hops."""
    _, status, location = redirects[-1]
    if location == url or any(location == hop for hop, _, _ in redirects):
        raise PermanentFetchError(f"redirect loop from {url} at {location}", status)
    if len(redirects) > limit:
        raise PermanentFetchError(f"more than {limit} redirects from {url}", status)


def method_after(status: int, method: str) -> str:
    """303 turns any method but HEAD into GET; 301 and 302 do so for POST (RFC 9110 §15.4)."""
    if method != "HEAD" and (status == 303 or (status in (301, 302) and method == "POST")):
        return "GET"
    return method
