"""The seed of a listed harvest: the start URL it was given (``SITE``), captured by every run.

A provider lists a site's files (``/index.html``), never the URL a user types (``/``), so a
listed harvest would leave replay without the site's home; wget and Heritrix always capture
their start URL. Every listed run (OAI-PMH or ResourceSync) fetches it once, conditionally
with the validators of its last capture, through the recorder: a ``response`` the first time
and whenever it changed, a ``revisit`` holding the stored 200 head when unchanged, with its
DIDL record and CDXJ line, so that replay answers the site's home at every capture time. A
redirect is archived as it is, not followed: its target is captured when a list names it.

The seed is none of the site's listed resources: it keeps its own row in the state (status
``seed``, :meth:`~harvester.storage.protocol.ResourceStore.remember_seed`), which no count of
the site includes, and its own ``seed`` field in the run's summary: ``fetched``,
``unchanged``, ``http-404`` (an error answer, archived as it is, as any 404) or ``failed``
(no answer; a warning). Neither changes the exit code, and its bytes are not in the
summary's ``bytes``. It is not captured when ``SITE`` is the endpoint itself, or a URL a
list names (then it is a listed resource like any other). In a shared job one worker of
those that run together captures it: each takes the lease ``seed:URL`` in turn, and one that
finds a capture made since its own start leaves it (a worker that starts after the others
are done is a run of its own, and captures it again).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

from harvester.archive.recorder import conditional_headers
from harvester.exceptions import FetchError
from harvester.listed.fetchstep import ListedFetch
from harvester.storage.protocol import Resource

log = logging.getLogger(__name__)
SEED = "seed"  # the status of the seed's row in the state
TURN = "seed:"  # the lease a worker of a shared job holds while it looks at the seed


def seed_url(site_url: str, endpoint: str | None) -> str | None:
    """The URL a listed harvest captures as its seed: ``site_url`` (``/`` for an empty path),
    or None when it is the endpoint itself.

    >>> seed_url("http://h:8080", "http://h:8080/oai")
    'http://h:8080/'
    >>> seed_url("http://h/oai", "http://h/oai") is None
    True
    """
    parts = urlsplit(site_url)
    url = urlunsplit(parts._replace(path=parts.path or "/", fragment=""))
    if endpoint is not None and urlsplit(endpoint)._replace(query="") == urlsplit(url):
        return None
    if endpoint is not None and endpoint.rstrip("/") == url.rstrip("/"):
        return None
    return url


def capture(fetch: ListedFetch, url: str, worker: str, started: float) -> None:
    """Capture the seed ``url`` for a run that began at ``started``; in a shared job, under
    its lease, and only when no other worker of the run has captured it already."""
    leases, site = fetch.state.leases, fetch.settings.site_url
    if leases is None:
        asyncio.run(capture_seed(fetch, url))
        return
    turn = leases.claim(site, TURN + url, worker)
    if turn is None:
        log.debug("%s: another worker captures the seed", url)
        return
    try:
        asyncio.run(capture_seed(fetch, url, since=started))
    finally:
        leases.release(site, turn)


async def capture_seed(fetch: ListedFetch, url: str, since: float | None = None) -> None:
    """Fetch ``url`` once (conditionally, after a first capture) and archive the answer in
    one WARC file, then keep its capture in the state; a list's resource is left to the
    list, and so is a seed captured at ``since`` or later (by another worker of the run). A
    failure is logged and noted in the summary (the seed is captured again next run)."""
    state, summary = fetch.state, fetch.summary
    last = state.get(url)
    if last is not None and last.status != SEED:
        log.debug("%s is a listed resource: no seed of its own", url)
        return
    if since is not None and last is not None and _captured_at(last) >= since:
        return
    res = last or Resource(url, status=SEED)
    await fetch.pacer.wait(url)
    async with fetch.fetcher() as fetcher:
        try:
            result = await fetcher.fetch(
                url, headers=conditional_headers(res), follow_redirects=False
            )
        except FetchError as exc:
            log.warning("the start URL %s: %s (captured again next run)", url, exc)
            summary.seed = "failed"
            return
    with fetch.recorder.writer.one_file():
        capture, unchanged = fetch.recorder.fetched(res, result)
        if result.status < 400:  # an error answer is archived, the last good capture kept
            state.remember_seed(fetch.settings.site_url, url, capture)
    summary.seed = "unchanged" if unchanged else "fetched"
    if result.status >= 400:  # the site's own answer (no home page): no failure of the run
        log.info("the start URL %s: HTTP %d %s, archived", url, result.status, result.reason)
        summary.seed = f"http-{result.status}"


def _captured_at(res: Resource) -> float:
    """When ``res`` was last captured (its WARC-Date), in seconds since the epoch; 0 if
    never."""
    try:
        return datetime.fromisoformat(res.warc_date or "").timestamp()
    except ValueError:
        return 0.0
