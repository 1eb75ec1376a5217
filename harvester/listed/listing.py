"""Listing a site through its provider: what is there, and what changed since the last run.

Strategy ``get`` lists identifiers (ListIdentifiers) and leaves the fetching to the harvest;
strategy ``didl`` lists records in ``oai_didl`` (ListRecords), which carry the resources by
value as mod_oai intended, pages read ahead (:mod:`harvester.listed.prefetcher`); it archives each
carried resource, then each OAI-PMH exchange with the carried bytes by reference to their
records (:mod:`harvester.listed.listpage`), and leaves only resources given by reference to be
fetched.

Each set asked for (or the whole repository) is its own list, with its own incremental bound
and position in the state (``harvester/storage/``): a list asks ``from`` its own last complete
list's responseDate minus the granularity's overlap. The position is saved after every page
(a ``didl`` page's once it is archived), so a crash mid-list resumes that list at the saved
token, lists read to their end before the crash are not read again, and a token the provider
no longer accepts restarts the list from its saved ``from`` date.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from harvester.archive.recorder import Recorder
from harvester.exceptions import (
    BadResumptionToken,
    CannotDisseminateFormat,
    NoRecordsMatch,
    ProtocolError,
    RecordsRepository,
)
from harvester.http.limits import oai_limits
from harvester.listed.carried import CarriedPage, carried_page
from harvester.listed.catchup import ListWatch
from harvester.listed.elision import Carried, digest
from harvester.listed.listpage import write_page
from harvester.listed.prefetcher import Prefetcher
from harvester.oai.client import EndpointInfo, ListedHeader, OAIClient, overlap_from
from harvester.settings import HarvestSettings
from harvester.storage.protocol import Listed, ListedPage, ListKey, State
from harvester.summary import Summary

log = logging.getLogger(__name__)


@dataclass
class Lister:
    """Lists the site through ``endpoint`` into ``state``; strategy ``didl`` archives what the
    records carry through ``recorder``. With ``decide_mode`` (no run has listed the endpoint
    yet) the first page decides whether it is a mod_oai site or a records repository.
    ``on_page`` is handed each page's URLs once the page is in the state (and a ``didl``
    page's carried files are archived), and the seconds the page took to arrive: a
    :class:`~harvester.listed.follower.ListFollower`. ``referenced_bytes`` sums the sizes the
    ``didl`` pages declare for the files they name by reference only, for the fetch step."""

    settings: HarvestSettings
    state: State
    endpoint: EndpointInfo
    recorder: Recorder
    summary: Summary
    decide_mode: bool = field(default=False, kw_only=True)
    on_page: Callable[[list[str], float], None] | None = field(default=None, kw_only=True)
    referenced_bytes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._deciding = self.decide_mode
        self._watch = ListWatch(self.endpoint.granularity)
        self._began: str | None = None  # this run's first list's first responseDate

    @property
    def site(self) -> str:
        return self.settings.site_url

    @property
    def keys(self) -> list[ListKey]:
        """The lists of this run: one per set asked for (or the whole repository)."""
        prefix = "oai_didl" if self.settings.oai_strategy == "didl" else "oai_dc"
        endpoint = self.endpoint.endpoint
        return [ListKey(endpoint, s, prefix) for s in self.settings.sets or (None,)]

    def run(self, expired: Callable[[], bool]) -> bool:
        """List every set asked for (or everything); True when every list ran to its end."""
        return all(self._list(key, expired) for key in self.keys)

    def advance_from(self) -> None:
        """Each list's next run lists from its own start, held back to anything still pending."""
        self.state.lists.advance(self.keys, self.state.oldest_unarchived(self.site))

    def started(self) -> str | None:
        """The responseDate of this run's first list: when listing began (a catch-up pass
        moves a list's bound, not this)."""
        dates = [d for d in (self.state.lists.started(self.keys), self._began) if d]
        return min(dates, default=None)

    # -- one list --------------------------------------------------------------------

    def _list(self, key: ListKey, expired: Callable[[], bool]) -> bool:
        position = self.state.lists.position(key)
        token = None
        if position.state == "listed":
            log.info("set %s was listed in full by an interrupted run", key.set_spec or "(all)")
            return True
        if position.state == "active":
            token, from_ = position.token, position.from_
            log.info("resuming the list of set %s from its saved position", key.set_spec or "(all)")
        else:
            from_ = self._from_date(position.harvested_until)
            self.state.lists.start(key, from_)
        self._watch = ListWatch(self.endpoint.granularity)
        return self._read(key, from_, token, expired) and self._catch_up(key, expired)

    def _read(
        self, key: ListKey, from_: str | None, token: str | None, expired: Callable[[], bool]
    ) -> bool:
        try:
            return self._pages(key, from_, token, expired)
        except BadResumptionToken:
            log.warning("the provider refused the saved token; restarting the list from %s", from_)
            self.state.lists.start(key, from_)
            return self._pages(key, from_, None, expired)

    def _catch_up(self, key: ListKey, expired: Callable[[], bool]) -> bool:
        """Read the list again from its bound while records changed during the last pass
        (:mod:`harvester.listed.catchup`); False if the run's time ran out first."""
        while (from_ := self._watch.next_from(self.settings.catch_up_passes)) is not None:
            if expired():
                return False
            bound = self._watch.bound
            log.info(
                "set %s changed while it was listed (until %s): catch-up pass %d from %s",
                key.set_spec or "(all)",
                self._watch.last,
                self._watch.passes + 1,
                from_,
            )
            self._watch.begin(from_)
            self.state.lists.start(key, from_)
            if not self._read(key, from_, None, expired):
                return False
            if self.state.lists.position(key).response_date is None and bound is not None:
                self.state.lists.page(key, None, bound)  # nothing since: the bound stays
        return True

    def _from_date(self, harvested_until: str | None) -> str | None:
        if harvested_until is None:
            return None
        return overlap_from(harvested_until, self.endpoint.granularity)

    def _pages(
        self, key: ListKey, from_: str | None, token: str | None, expired: Callable[[], bool]
    ) -> bool:
        before = token  # the token that asked for the page at hand
        asked = time.monotonic()
        try:
            fetched = self._fetch(from_, key.set_spec, token)
            for listed, broken, page_token, response_date, page in fetched:
                waited = time.monotonic() - asked
                self._decide(key, listed)
                if broken:  # a mod_oai site's list: each header is a resource's URL
                    raise ProtocolError(broken[0])
                # A page of oai_didl records is archived before the list moves past it: until
                # then the saved position still asks for it, so a run stopped in between lists
                # it (and archives its exchange) again.
                after = page_token if page is None else before
                self.state.record_page(self.site, ListedPage(key, listed, after, response_date))
                self.summary.listed += self._watch.page(listed, response_date, self._bound(key))
                if page is not None:
                    self._archive_page(page)
                    self.referenced_bytes += page.referenced_bytes
                    with self.state.transaction():
                        self.state.lists.page(key, page_token, response_date)
                before = page_token
                if self.on_page is not None:
                    self.on_page([item.url for item in listed if not item.deleted], waited)
                if expired():
                    return False
                asked = time.monotonic()
        except NoRecordsMatch:
            if before is not None:  # a resumed page: the records left changed meanwhile
                log.info("the list ended early: its last records changed while it was read")
                self._watch.ended_early()
            else:  # the next run lists from the same date: an empty list moves nothing forward
                log.info("nothing new since %s", from_)
        except CannotDisseminateFormat:
            if not self._deciding:
                raise
            self._decided(key, why="it has no oai_didl records")
        self.state.lists.finish(key)
        return True

    def _bound(self, key: ListKey) -> str | None:
        """The list's bound as the state keeps it (its first page's responseDate), asked
        until known."""
        if self._watch.bound is not None:
            return self._watch.bound
        bound = self.state.lists.position(key).response_date
        if bound is not None and (self._began is None or bound < self._began):
            self._began = bound
        return bound

    def _decide(self, key: ListKey, listed: list[Listed]) -> None:
        """On the first page an endpoint ever lists: a mod_oai site's identifiers are its
        files' URLs; anything else is a repository to ingest in records mode. A header left
        out as broken does not decide."""
        if not self._deciding or not listed:
            return
        first = listed[0].identifier
        if first.lower().startswith(("http://", "https://")):
            self._deciding = False
            self.state.items.decide_mode(self.endpoint.endpoint, False)
            return
        self._decided(key, why=f"its identifiers, like {first!r}, are not URLs")

    def _decided(self, key: ListKey, *, why: str) -> None:
        """A records repository: this list was never ours to keep."""
        self._deciding = False
        with self.state.transaction():
            self.state.lists.forget(key)
            self.state.items.decide_mode(self.endpoint.endpoint, True)
        raise RecordsRepository(f"{self.endpoint.endpoint}: {why}: ingesting its records")

    def _fetch(
        self, from_: str | None, set_spec: str | None, token: str | None
    ) -> Iterator[tuple[list[Listed], tuple[str, ...], str | None, str, CarriedPage | None]]:
        """Each page: its headers, the broken ones (``get``: decided on, not raised, so
        that a records repository's broken header is one broken record there), its token,
        responseDate and the carried page (``didl``)."""
        args = {
            "from_": None if token else from_,
            "set_spec": None if token else set_spec,
            "resumption_token": token,
        }
        didl = self.settings.oai_strategy == "didl"
        limits = oai_limits(self.settings)
        with OAIClient(self.endpoint.endpoint, limits=limits, compressed=not didl) as client:
            if didl:
                # A pipeline of three threads: one reads and parses the page after next (its
                # request needs the token at the end of the one before), one decodes,
                # digests and compresses the next page's files, and this one archives the
                # page at hand (and digests it: the reading thread is the slowest stage).
                raws = client.list_records_raw(metadata_prefix="oai_didl", **args)
                with (
                    Prefetcher(raws, name="oai-didl-read") as read,
                    Prefetcher((carried_page(r) for r in read), name="oai-didl-pages") as ready,
                ):
                    for page in ready:
                        raw = page.raw
                        listed = [_listed(r.header) for r in raw.records]
                        yield listed, (), raw.token, raw.response_date, page
            else:
                for ids in client.list_identifiers(metadata_prefix="oai_dc", **args):
                    listed = [_listed(h) for h in ids.headers]
                    yield listed, ids.broken, ids.token, ids.response_date, None

    # -- the didl strategy -------------------------------------------------------------

    def _archive_page(self, page: CarriedPage) -> None:
        """Every resource the page carries by value, then the exchange with those bytes by
        reference to their records (:mod:`harvester.listed.listpage`), all in one file; the
        resources are marked archived with one commit, made before that file can be
        finished."""
        with self.recorder.writer.one_file(), self.state.batch():
            carried = self._archive_carried(page)
            write_page(self.recorder, page.raw.exchange, carried)

    def _archive_carried(self, page: CarriedPage) -> list[Carried]:
        """The resources archived from ``page``, each with the record holding its bytes."""
        archived = []
        for raw, carried in zip(page.raw.records, page.carried, strict=True):
            res = None if carried is None else self.state.get(raw.header.identifier)
            if carried is None or res is None or res.status != "pending":
                continue  # by reference only: the fetch step GETs it
            capture, unchanged = self.recorder.carried(
                res,
                raw.header.identifier,
                carried.mime,
                carried.body,
                carried.headers,
                carried.ready,
                page=page.raw.exchange,
            )
            self.state.mark_archived(res.url, capture, None)
            self.summary.bytes += len(carried.body)
            if unchanged:  # a revisit holds no bytes: the page keeps this file's base64
                self.summary.unchanged += 1
                continue
            self.summary.fetched += 1
            held = capture.payload_digest or digest(carried.body)
            archived.append(Carried(carried.encoded, carried.body, capture.record_id, held))
        return archived


def _listed(header: ListedHeader) -> Listed:
    """A mod_oai header as the state keeps it: its identifier is the resource's URL."""
    h = header  # field by field: dataclasses.asdict copies deeply, at a cost per header
    return Listed(h.identifier, h.identifier, h.datestamp, h.set_specs, h.deleted)
