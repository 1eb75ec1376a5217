"""The redirect chain of a listed URL: every hop fetched, and later archived, by itself.

On the OAI-PMH get path a listed URL that answers a redirect is not followed inside the
fetcher, which would hand back the target's response alone: each hop is fetched without
following (``follow_redirects=False``, as the crawl fetches every URL), so the recorder can
archive each response under the URI it came from, with its ``Location``. A target is followed
while it is on the listed URL's host (the host that published the list); a target on another
host, a loop or a chain longer than the limit ends the chain at the redirect, with a log line
(:mod:`harvester.http.redirects` holds the rules). Only the first request carries the conditional
headers, which belong to the listed URL's last capture.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from harvester.crawl.urls import host_of
from harvester.http.exchange import HttpExchange
from harvester.http.redirects import redirect_target

if TYPE_CHECKING:
    from harvester.http.fetch import Fetcher

__all__ = ["fetch_chain"]

log = logging.getLogger(__name__)


async def fetch_chain(
    fetcher: Fetcher, url: str, headers: Mapping[str, str], *, limit: int
) -> list[HttpExchange]:
    """The exchanges from ``url`` to the end of its redirect chain: at least one, ``url``'s.

    Raises what :meth:`~harvester.http.fetch.Fetcher.fetch` raises, for any hop.
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
