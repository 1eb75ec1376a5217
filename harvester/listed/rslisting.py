"""Listing a ResourceSync source into the state, as :mod:`harvester.listed.listing` lists OAI-PMH.

A ResourceSync source states its complete list, so the first run takes every entry of the
Resource List (linked from anywhere or not) as pending, each with its ``lastmod`` as its
version's datestamp. The list's ``md at`` (the source's clock) becomes the bound; a later run
reads only the Change List, taking the changes whose datetime is at or after the bound minus
one second (a change stamped in the second the Resource List was made is read again, not
lost; one already archived is skipped by its datestamp): ``created`` and ``updated`` become
pending, ``deleted`` a deletion note. A source without a Change List has its Resource List
read again, and what is archived with the same ``lastmod`` is not fetched again.

The list's state is one row of ``lists`` (endpoint: the Capability List, prefix
``resourcesync``), so a run killed while listing lists again, and the bound moves only once
every listed resource is archived (:meth:`ListState.advance`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from itertools import islice

from harvester.http.limits import oai_limits
from harvester.listed.resourcesync import Listing, ResourceSyncReader, ResourceSyncSource
from harvester.oai.dates import parse_oai_datestamp
from harvester.settings import HarvestSettings
from harvester.storage.protocol import Listed, ListedPage, ListKey, State
from harvester.summary import Summary

log = logging.getLogger(__name__)
PREFIX = "resourcesync"
PAGE = 1000  # entries recorded per state transaction


class ResourceSyncLister:
    """``run``, ``started`` and ``advance_from``, as :class:`harvester.listed.listing.Lister`."""

    def __init__(
        self,
        settings: HarvestSettings,
        state: State,
        source: ResourceSyncSource,
        summary: Summary,
    ) -> None:
        self.settings = settings
        self.state = state
        self.source = source
        self.summary = summary
        self.site = settings.site_url
        self.key = ListKey(source.capability_list, None, PREFIX)

    def run(self, expired: Callable[[], bool]) -> bool:
        """List the source's resources, or its changes since the last complete run."""
        position = self.state.lists.position(self.key)
        if position.state == "listed":
            return True
        since = position.harvested_until or None  # "": an undated list, read it all again
        self.state.lists.start(self.key, since)
        with ResourceSyncReader(self.site, oai_limits(self.settings)) as reader:
            if since is not None and self.source.change_list is not None:
                bound, listed = self._changes(reader, self.source.change_list, since)
            elif self.source.resource_list is not None:
                bound, listed = self._resources(reader, self.source.resource_list)
            else:
                log.warning("%s lists neither resources nor changes", self.key.endpoint)
                bound, listed = None, iter(())
            self._record(listed, bound)
        self.state.lists.finish(self.key)
        return True

    def started(self) -> str | None:
        return self.state.lists.started([self.key])

    def advance_from(self) -> None:
        self.state.lists.advance([self.key], self.state.oldest_unarchived(self.site))

    # -- the two lists --------------------------------------------------------------------

    def _resources(
        self, reader: ResourceSyncReader, url: str
    ) -> tuple[str | None, Iterator[Listed]]:
        at, entries = reader.entries(url, "resourcelist")
        log.info("reading the resource list %s", url)
        return at, (_listed(entry, at) for entry in entries)

    def _changes(
        self, reader: ResourceSyncReader, url: str, since: str
    ) -> tuple[str | None, Iterator[Listed]]:
        start = _minus_second(since)
        _at, entries = reader.entries(url, "changelist")
        changes = sorted(
            (e for e in entries if e.at is not None and e.at >= start), key=lambda e: e.at or ""
        )
        log.info("%d changes at or after %s in %s", len(changes), start, url)
        bound = max((e.at for e in changes if e.at), default=None)
        return bound, (_listed(entry, None) for entry in changes)

    def _record(self, listed: Iterable[Listed], bound: str | None) -> None:
        items = iter(listed)
        while page := list(islice(items, PAGE)):
            # undated entries (no bound): the next run reads everything again
            self.state.record_page(self.site, ListedPage(self.key, page, None, bound or ""))
            self.summary.listed += len(page)


def _listed(entry: Listing, at: str | None) -> Listed:
    stamp = entry.at or at or ""
    return Listed(
        url=entry.url,
        identifier=entry.url,
        datestamp=stamp,
        set_specs=(),
        deleted=entry.change == "deleted",
    )


def _minus_second(stamp: str) -> str:
    """One second before ``stamp``.

    >>> _minus_second("2024-05-10T00:00:00Z")
    '2024-05-09T23:59:59Z'
    """
    moved = parse_oai_datestamp(stamp) - timedelta(seconds=1)
    return moved.strftime("%Y-%m-%dT%H:%M:%SZ")
