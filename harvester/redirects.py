"""Redirects (RFC 9110 §15.4): where a 3xx points, which hops end a chain, and the redirect
chain of a listed URL, every hop fetched, and later archived, by itself.

:func:`redirect_target` reads a 3xx's ``Location`` as an absolute http(s) URL;
:func:`check_hop` ends a chain at a loop or past a limit; :func:`method_after` is the method
the next hop is sent with. The fetcher (:mod:`harvester.fetch`) follows redirects with these.

On the OAI-PMH get path a listed URL that answers a redirect is not followed inside the
fetcher, which would hand back the target's response alone: each hop is fetched without
following (``follow_redirects=False``, as the crawl fetches every URL) by :func:`fetch_chain`,
so the recorder can archive each response under the URI it came from, with its ``Location``.
A target is followed while it is on the listed URL's host (the host that published the list);
a target on another host, a loop or a chain longer than the limit ends the chain at the
redirect, with a log line. Only the first request carries the conditional headers, which
belong to the listed URL's last capture.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from yarl import URL

from harvester.crawl.urls import host_of
from harvester.exceptions import PermanentFetchError
from harvester.exchange import HttpExchange, Redirect, ResourceFetcher

__all__ = ["REDIRECT_STATUSES", "check_hop", "fetch_chain", "method_after", "redirect_target"]

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def redirect_target(result: HttpExchange) -> str | None:
    """The absolute URL a 3xx points to, without its fragment; None if not a redirect."""
    location = result.header("Location")
    if result.status not in REDIRECT_STATUSES or not location:
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


async def fetch_chain(
    fetcher: ResourceFetcher, url: str, headers: Mapping[str, str], *, limit: int
) -> list[HttpExchange]:
    """The exchanges from ``url`` to the end of its redirect chain: at least one, ``url``'s.

    Raises what :meth:`~harvester.fetch.Fetcher.fetch` raises, for any hop.
    """
    hops = [await fetcher.fetch(url, headers=headers, follow_redirects=False)]
    seen = {url}
    while (target := redirect_target(hops[-1])) is not None:
        reason = _stop_reason(url, target, seen, len(hops), limit)
        if reason is not None:
            log.info("%s: not following the redirect to %s: %s", hops[-1].url, target, reason)
            break
        seen.add(target)
        hops.append(await fetcher.fetch(target, follow_redirects=False))
    return hops


def _stop_reason(listed: str, target: str, seen: set[str], hops: int, limit: int) -> str | None:
    """Why the chain ends at ``target`` rather than following it; None to follow."""
    try:
        same_host = host_of(target) == host_of(listed)
    except ValueError:
        return "not a URL that can be fetched"
    if not same_host:
        return "another host than the listed URL's"
    if target in seen:
        return "a redirect loop"
    if hops > limit:
        return f"more than {limit} redirects"
    return None
