"""The records-mode run: list records, archive the pages, fetch linked resources, write DIDLs.

For each ``--metadata-prefix`` (``all``: every format ListMetadataFormats offers) and each
``--set`` (or the whole repository), :class:`~harvester.records.lister.RecordLister` reads the
list, archiving every page; each page's records go into the state (``itemstate.py``) with the
list's position in one transaction. Then each new or changed item is *settled*: the http(s)
URLs its metadata names (:mod:`.links`) that are in scope (:mod:`.scope`) are fetched through
the harvest's one fetch step (robots.txt, ``--delay``, per-host limits, conditional GET,
revisit records when unchanged); with ``--linked files``, each landing page's
``citation_pdf_url`` and Signposting targets (:mod:`.landing`) too. Last, the item's DIDL
record (:mod:`.itemdidl`) is written, naming each resource's record and digests; a deleted item
gets a deletion note; unchanged items are not touched. Items settle after every page when one
format is listed, else after every list is read, so each record holds all formats. With
``--linked none`` and one format, :mod:`.didlbuilder`'s process makes a page's records while
the next pages are listed, written just before a later page's commit, which settles them.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING

from lxml import etree

from harvester.archive.didl import OaiHeaderInfo, Provenance, WarcPointer, deletion_didl
from harvester.archive.recorder import Recorder
from harvester.exceptions import ArchiveError, FetchError, HarvestError, StateError
from harvester.http.exchange import HttpExchange
from harvester.http.limits import oai_limits
from harvester.oai.client import EndpointInfo, OAIClient
from harvester.records.didlbuilder import DidlBuilders
from harvester.records.domains import LinkScope
from harvester.records.itemdidl import LinkedCapture, item_didl
from harvester.records.lister import ListOutcome, RecordLister
from harvester.records.metadatalinks import LANDING, Link, record_links
from harvester.records.pages import RecordsPage
from harvester.settings import HarvestSettings
from harvester.storage.protocol import Item, ListKey, Resource, State
from harvester.summary import Summary

if TYPE_CHECKING:
    from harvester.http.fetch import Fetcher

log = logging.getLogger(__name__)
RECENT = 4096  # linked resources remembered as fetched in this run
BUILDERS = 1  # processes making the DIDL records with --linked none (one keeps up now)
IN_FLIGHT = 2  # groups handed to the builders and not yet written
SETTLE_EVERY = 256  # items whose DIDL records share one state commit (and one WARC file)
_STATUS = {"new": "pending", "changed": "pending", "deleted": "deleting"}
Settled = tuple[str, str, str]  # an item whose record is written: identifier, status, record ID
FetchOne = Callable[["Fetcher", Recorder, Resource], Awaitable[tuple[HttpExchange, bool] | None]]


@dataclass(frozen=True)
class Stored:
    """A page's items that are new, changed or deleted, and the metadata of the new ones
    (all the formats they have: the state holds nothing else of them)."""

    items: list[Item]
    fresh: dict[str, bytes]


@dataclass
class Ingest:
    """One records-mode run over ``endpoint``; :meth:`run` inside an event loop."""

    settings: HarvestSettings
    state: State
    endpoint: EndpointInfo
    recorder: Recorder
    summary: Summary
    fetch_one: FetchOne
    fetcher: Fetcher | None  # None with --linked none, which fetches nothing

    def __post_init__(self) -> None:
        self.items = self.state.items
        self._scope: LinkScope | None = None
        # The last RECENT resources fetched: one linked by many items is fetched once a run.
        self._recent: OrderedDict[str, tuple[LinkedCapture, list[Link]]] = OrderedDict()
        self.started = datetime.now(UTC).timestamp()
        self._builder: DidlBuilders | None = None
        self._pages_read = 0  # list pages read in this run, over every list

    async def run(self) -> None:
        """List every list, settle every item; raise HarvestError if a list failed and no
        list page at all was read (an OAI-PMH error answer is none, though archived)."""
        keys = self.keys()
        single = len(self.prefixes) == 1
        lister = RecordLister(self.settings, self.endpoint, self.recorder)
        done: list[ListKey] = []
        try:
            # Without linked resources, a page's DIDL records are made on another core.
            if single and self.settings.linked == "none":
                self._builder = DidlBuilders(BUILDERS)
            for key in keys:
                if await self._list(lister, key, settle=single):
                    done.append(key)
        finally:
            lister.close()
            if self._builder is not None:
                self._builder.close()
                self._builder = None
        await self._settle(self.items.unsettled(self.endpoint.endpoint, before=self.started))
        if not self.settings.until_date:
            self.state.lists.advance(done, None)
        if len(done) < len(keys) and not self._pages_read:
            raise HarvestError(
                f"no list page read from {self.endpoint.endpoint}: "
                + "; ".join(self.summary.errors[-3:])
            )

    @property
    def prefixes(self) -> tuple[str, ...]:
        return self._prefixes

    def keys(self) -> list[ListKey]:
        """One list per metadata prefix and set asked for."""
        asked = self.settings.metadata_prefixes or ("oai_dc",)
        self._prefixes = self._all_formats() if "all" in asked else asked
        sets = self.settings.sets or (None,)
        return [ListKey(self.endpoint.endpoint, s, p) for p in self._prefixes for s in sets]

    def _all_formats(self) -> tuple[str, ...]:
        with OAIClient(self.endpoint.endpoint, limits=oai_limits(self.settings)) as client:
            found = client.list_metadata_formats()
        if not found:
            raise HarvestError(f"{self.endpoint.endpoint} offers no metadata format to list")
        log.info("metadata formats of %s: %s", self.endpoint.endpoint, ", ".join(found))
        return found

    # -- one list ----------------------------------------------------------------------

    async def _list(self, lister: RecordLister, key: ListKey, *, settle: bool) -> bool:
        """Read list ``key`` to its end (True), or until an error, logged and counted."""
        position, token = self.state.lists.position(key), None
        if position.state == "listed":
            return True
        if position.state == "active":
            token, from_ = position.token, position.from_
        else:
            from_ = lister.from_date(position.harvested_until)
            self.state.lists.start(key, from_)
        outcome = ListOutcome()
        building: list[list[Item]] = []  # groups being made, oldest first
        try:
            for page in lister.pages(key, from_, token, outcome):
                if self._builder is not None:
                    # The page is stored in the commit that settles the oldest group, then
                    # goes to the builder, which meanwhile makes the next group's records.
                    group = self._send(
                        self._builder, key, self._store_settling(key, page, building)
                    )
                    building += [group] if group else []
                    continue
                changed = self._store(key, page)
                if settle:
                    await self._settle(changed.items)
        except HarvestError as exc:
            log.error("%s", exc)
            self.summary.errors.append(str(exc))
            self.summary.lists_failed += 1
        finally:
            while building:
                self._write_built(building.pop(0), newer=building)
            self.summary.broken += len(outcome.broken)
            self.summary.errors += outcome.broken
            self._pages_read += outcome.pages
        if outcome.complete:
            self.state.lists.finish(key)
        return outcome.complete

    def _store_settling(self, key: ListKey, page: RecordsPage, groups: list[list[Item]]) -> Stored:
        """:meth:`_store` the page; once ``IN_FLIGHT`` groups are being built, the oldest's
        records are written first (into the file the commit's block keeps open) and its items
        settled in the page's transaction: one commit a page."""
        if len(groups) < IN_FLIGHT:
            return self._store(key, page)
        with self.recorder.writer.one_file():
            return self._store(key, page, self._write_members(groups.pop(0), newer=groups))

    def _store(self, key: ListKey, page: RecordsPage, settled: Sequence[Settled] = ()) -> Stored:
        """The page's records and the list's position, in one transaction (which first
        settles the ``settled`` items, whose records are written); the items that are new,
        changed or deleted."""
        headers = [record.header for record in page.records]
        with self.state.transaction():
            if settled:
                self.items.settle_many(self.endpoint.endpoint, settled)
            outcomes = self.items.note_page(
                key.endpoint, key.prefix, list(zip(headers, page.metadata, strict=True))
            )
            self.state.lists.page(key, page.token, page.response_date)
        self.summary.listed += len(page.records)
        items, fresh = [], {}
        for header, xml, outcome in zip(headers, page.metadata, outcomes, strict=True):
            if outcome == "unchanged":
                self.summary.unchanged_records += 1
                continue
            status = _STATUS[outcome]
            items.append(Item(header.identifier, header.datestamp, header.set_specs, status, None))
            if outcome == "new":
                fresh[header.identifier] = xml
            else:  # listed twice on the page: the state holds the later version
                fresh.pop(header.identifier, None)
        return Stored(items, fresh)

    # -- settling items ------------------------------------------------------------------

    async def _settle(self, items: Iterable[Item]) -> None:
        """Write each item's DIDL record (or deletion note), its linked resources first;
        the records of up to ``SETTLE_EVERY`` items as one WARC group, in one WARC file and
        one state commit."""
        todo, endpoint = iter(items), self.endpoint.endpoint
        while chunk := list(islice(todo, SETTLE_EVERY)):
            provenance = self.recorder.provenance()  # one harvest time for the block
            formats = self.items.formats_of(endpoint, [item.identifier for item in chunk])
            with self.recorder.writer.one_file(), self.state.batch():
                made = [
                    await self._record_of(item, formats.get(item.identifier, []), provenance)
                    for item in chunk
                ]
                written = self.recorder.writer.write_metadata_group([didl for didl, _s in made])
                self.items.settle_many(
                    endpoint,
                    [
                        (item.identifier, status, at.record_id)
                        for item, (_didl, status), at in zip(chunk, made, written, strict=True)
                    ],
                )

    def _send(self, builder: DidlBuilders, key: ListKey, stored: Stored) -> list[Item] | None:
        """Hand the items' DIDL records to the builder: a new item's formats are the one
        just listed, the others' are read from the state."""
        items = stored.items
        if not items:
            return None
        fresh = stored.fresh
        others = [item.identifier for item in items if item.identifier not in fresh]
        formats = self.items.formats_of(self.endpoint.endpoint, others) if others else {}
        for identifier, xml in fresh.items():
            formats.setdefault(identifier, [(key.prefix, xml)])
        jobs = [
            (
                item.identifier,
                item.datestamp,
                item.set_specs,
                item.status == "deleting",
                formats.get(item.identifier, []),
            )
            for item in items
        ]
        builder.send(self.recorder.provenance(), self.endpoint.endpoint, jobs)
        return items

    def _write_built(self, sent: list[Item], newer: list[list[Item]]) -> None:
        """Write the records the builder made of ``sent`` as one group, then settle the
        items in one state commit (see :meth:`_write_members`)."""
        with self.recorder.writer.one_file():
            settled = self._write_members(sent, newer)
            with self.state.batch():
                self.items.settle_many(self.endpoint.endpoint, settled)

    def _write_members(self, sent: list[Item], newer: list[list[Item]]) -> list[Settled]:
        """Write the records the builder made of ``sent`` as one group (flushed); the items
        to settle in the commit that follows, inside the caller's ``one_file`` block. An item
        stored again since, in a ``newer`` group, is left for that group's record (the state
        holds the newer version)."""
        if self._builder is None:
            raise ArchiveError("records were written with no DIDL builder running")
        written = self.recorder.writer.write_members(self._builder.receive())
        settled = [
            (item.identifier, "deleted" if item.status == "deleting" else "archived", at.record_id)
            for item, at in zip(sent, written, strict=True)
        ]
        deleted = sum(status == "deleted" for _i, status, _at in settled)
        self.summary.deleted += deleted
        self.summary.records += len(settled) - deleted
        again = {item.identifier for group in newer for item in group}
        return [triple for triple in settled if triple[0] not in again]

    def _oai(self, item: Item) -> OaiHeaderInfo:
        return OaiHeaderInfo(
            item.identifier,
            item.datestamp,
            item.set_specs,
            self.endpoint.endpoint,
            deleted=item.status == "deleting",
        )

    async def _record_of(
        self, item: Item, formats: list[tuple[str, bytes]], provenance: Provenance
    ) -> tuple[bytes, str]:
        """The item's DIDL record (its linked resources archived first) or deletion note,
        and the item's status once it is written."""
        oai = self._oai(item)
        if oai.deleted:
            note = deletion_didl(
                item.identifier,
                observed=datetime.now(UTC),
                oai=oai,
                provenance=provenance,
                previous=None,
            )
            self.summary.deleted += 1
            return note, "deleted"
        captures, complete = await self._linked(formats, refetch=item.status == "pending")
        didl = item_didl(oai, formats, captures, provenance)
        self.summary.records += 1
        return didl, "archived" if complete else "partial"

    async def _linked(
        self, formats: list[tuple[str, bytes]], *, refetch: bool
    ) -> tuple[list[LinkedCapture], bool]:
        """The item's linked resources as archived, and whether none failed."""
        if self.settings.linked == "none":
            return [], True
        roots = [etree.fromstring(xml) for _prefix, xml in formats if xml]
        todo = [link for link in record_links(roots) if self._wanted(link)]
        captures: dict[str, LinkedCapture] = {}
        complete, depth = True, {link.url: 0 for link in todo}
        while todo:
            link = todo.pop(0)
            got = await self._fetch(link.url, refetch)
            if got is None:
                complete = False
                continue
            capture, found = got
            captures[link.url] = capture
            if self.settings.linked == "files" and depth[link.url] == 0:
                for more in found:
                    if more.url not in depth and self._wanted(more):
                        depth[more.url] = 1
                        todo.append(more)
        return list(captures.values()), complete

    def _wanted(self, link: Link) -> bool:
        if self.settings.linked == "landing" and link.kind != LANDING:
            return False
        if self._scope is None:  # reading the public suffix list takes a second
            self._scope = LinkScope(self.endpoint.endpoint, self.settings.linked_scope)
        if not self._scope.allows(link.url):
            log.info("not fetched, out of scope: %s", link.url)
            return False
        return True

    async def _fetch(self, url: str, refetch: bool) -> tuple[LinkedCapture, list[Link]] | None:
        """``url`` fetched (conditionally, when archived before) or, unless ``refetch`` or
        not fetched yet, its last capture; with the links its page and headers point at."""
        if url in self._recent:
            self._recent.move_to_end(url)
            return self._recent[url]
        got = await self._fetch_or_recall(url, refetch)
        if got is not None:
            self._recent[url] = got
            if len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        return got

    async def _fetch_or_recall(
        self, url: str, refetch: bool
    ) -> tuple[LinkedCapture, list[Link]] | None:
        self.items.add_resource(self.settings.site_url, url)
        res = self.state.get(url)
        if res is None:
            raise StateError(f"{url}: no resource row right after it was added")
        if refetch or res.status != "archived" or self.items.linked(url) is None:
            if self.fetcher is None:  # only --linked none has none, and fetches nothing
                raise FetchError(f"{url}: a linked resource to fetch with --linked none")
            got = await self.fetch_one(self.fetcher, self.recorder, res)
            if got is None:
                return None
            result, unchanged = got
            links = None if unchanged else self._pointed_at(result)
            mime = result.header("Content-Type")
            self.items.note_linked(url, "revisit" if unchanged else "response", mime, links)
            res = self.state.get(url)
            if res is None:
                raise StateError(f"{url}: its resource row is gone after its fetch")
        kind, mime, pairs = self.items.linked(url) or ("response", None, [])
        return _capture(res, kind, mime), [Link(u, k) for k, u in pairs]

    def _pointed_at(self, result: HttpExchange) -> list[tuple[str, str]]:
        """The Signposting and ``citation_pdf_url`` links of a fresh response."""
        from harvester.records.landing import page_links, signposting  # html.parser, if used

        links = signposting(result.response_headers, result.url)
        if "html" in (result.header("Content-Type") or "").lower():
            links += page_links(result.body, result.url)
        return [(link.kind, link.url) for link in links if link.url != result.url]


def _capture(res: Resource, record_type: str, mime: str | None) -> LinkedCapture:
    offset, length = res.warc_offset or 0, res.warc_length or 0
    pointer = WarcPointer(res.record_id or "", res.warc_file or "", offset, length, record_type)
    return LinkedCapture(res.url, mime, res.sha1 or "", res.sha256 or "", pointer)
