"""Listing records (OAI-PMH §4.5) per (set, metadataPrefix), with real repositories' quirks.

Each list has its bound and position in the state (``State.lists``): it asks
``from`` its own last complete list's responseDate less one unit of the repository's own
granularity (a day-granularity repository gets ``YYYY-MM-DD``), or ``--from``/``--until``
when given, and its token is saved after every page, with the page's records, in one
transaction. Every response is archived as received, under its real request URL, before anything
read from it is used (it is fetched, its WARC records made and it is read in the list's own
thread, while the page before is stored). Then:

- 503 (or 429) with ``Retry-After`` in seconds or as an HTTP-date is waited out and retried
  by :class:`harvester.oai.httpclient.Http`;
- an OAI-PMH error is read whatever the HTTP status it comes with (InvenioRDM: 422), its
  answer archived as any page;
- ``badResumptionToken`` (an expired token) restarts the list from its own bound (its
  ``from``): a list need not be sorted by datestamp, so the latest datestamp seen is no
  safe place to go on from; records listed again with the datestamp already stored are not
  touched again. A token refused in the restarted list too fails the list (the run exits 3)
  and its bound stays where it was;
- a ``responseDate`` with a UTC offset is converted to UTC, with one warning;
- a token seen before in the list ends it with a :class:`ProtocolError` after its page,
  before the page it names could come round again;
- ``noRecordsMatch`` ends the list: nothing changed;
- a broken record is reported and left out, the rest of its page used (:mod:`.pages`);
- a ``completeListSize`` that disagrees with the records that arrived is logged.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from harvester.archive.capturegroup import exchange_group
from harvester.archive.recordbytes import Built
from harvester.archive.recorder import Recorder
from harvester.clock import utcnow
from harvester.exceptions import BadResumptionToken, NoRecordsMatch, ProtocolError
from harvester.http.exchange import HttpExchange
from harvester.http.limits import oai_limits
from harvester.oai.client import EndpointInfo, overlap_from
from harvester.oai.connectiontransport import kept_alive
from harvester.oai.dates import DAY
from harvester.oai.httpclient import Http
from harvester.oai.identify import note_offset
from harvester.records.pages import RecordsPage, read_page
from harvester.settings import HarvestSettings
from harvester.storage.protocol import ListKey

log = logging.getLogger(__name__)
MAX_RESTARTS = 1  # a list restarted once from its bound; refused again, it fails


@dataclass
class ListOutcome:
    """What one list did: records read, records left out as broken, and how it ended."""

    pages: int = 0  # list pages read (an OAI-PMH error answer is none)
    records: int = 0
    broken: list[str] = field(default_factory=list)
    complete: bool = False
    error: str | None = None


@dataclass(frozen=True)
class _Fetched:
    """A page as the list's thread leaves it: the exchange, its WARC records when built by
    hand, and the page read from it, or the error reading it raised."""

    exchange: HttpExchange
    built: list[Built] | None
    page: RecordsPage | None
    error: Exception | None = None


class RecordLister:
    """Reads the lists of one endpoint; :meth:`pages` yields each page after archiving it."""

    def __init__(
        self,
        settings: HarvestSettings,
        endpoint: EndpointInfo,
        recorder: Recorder,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.recorder = recorder
        self.transport = kept_alive()
        self.http = Http(self.transport, oai_limits(settings), sleep, utcnow, random.Random())
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="oai-list")

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.transport.close()

    def from_date(self, harvested_until: str | None) -> str | None:
        """``--from``, else the list's bound less one granularity unit, else None; in the
        repository's granularity (a day-granularity one is never sent a time)."""
        if self.settings.from_date:
            return self._day(self.settings.from_date)
        if harvested_until is None:
            return None
        return overlap_from(harvested_until, self.endpoint.granularity)

    def pages(
        self, key: ListKey, from_: str | None, token: str | None, outcome: ListOutcome
    ) -> Iterator[RecordsPage]:
        """Every page of list ``key`` (from ``token`` when resuming), each archived first.

        ``from_`` is the list's own bound: a token refused (expired) restarts the list from
        it, since a list need not be sorted by datestamp (InvenioRDM's is not, DOAJ's is
        newest first); records listed again with the datestamp already stored are not
        touched again. A restart refused too raises, the list's bound kept.
        """
        restarts, used = 0, set[str]()
        size: int | None = None
        args = self._args(key, from_) if token is None else self._resume(token)
        fresh, pending = token is None, self._request(args)
        while True:
            try:
                page = self._page(pending)
            except NoRecordsMatch:
                log.info("%s: no records since %s", _name(key), from_ or "the start")
                break
            except BadResumptionToken as exc:
                restarts += 1
                if restarts > MAX_RESTARTS:
                    raise BadResumptionToken(
                        f"{_name(key)}: a resumptionToken refused again after listing anew"
                        f" from {from_ or 'the start'}; the list keeps that bound: {exc}"
                    ) from None
                log.warning("%s: %s; listing anew from %s", _name(key), exc, from_ or "the start")
                used, fresh = set(), False
                pending = self._request(self._args(key, from_))
                continue
            outcome.pages += 1
            self._note_offset(page)
            outcome.records += len(page.records)
            outcome.broken += page.broken
            for line in page.broken:
                log.warning("%s", line)
            size = page.complete_list_size if page.complete_list_size is not None else size
            repeated = page.token in used
            if page.token is not None and not repeated:
                used.add(page.token)
                pending = self._request(self._resume(page.token))  # while this page is stored
            yield page
            if page.token is None:
                break
            if repeated:
                raise ProtocolError(f"{_name(key)}: the resumptionToken {page.token!r} repeats")
        outcome.complete = True
        arrived = outcome.records + len(outcome.broken)
        if fresh and size is not None and size != arrived:
            log.warning(
                "%s: completeListSize said %d, %d records arrived", _name(key), size, arrived
            )

    def _note_offset(self, page: RecordsPage) -> None:
        """Warn (once for the endpoint) of a responseDate sent with an offset."""
        if page.date_sent is not None:
            note_offset(self.endpoint.endpoint, page.date_sent, page.response_date)

    def _request(self, args: dict[str, str]) -> Future[_Fetched]:
        """The next page's request, sent from the list's own thread: the network wait of one
        page, making its WARC records and reading it overlap the storing of the one before."""
        return self._pool.submit(self._fetch, args)

    def _fetch(self, args: dict[str, str]) -> _Fetched:
        """In the list's thread: the page, its WARC records and what it says (or what
        reading it raised: raised only once the page is archived)."""
        exchange = self.http.get(self.endpoint.endpoint, args)
        built = exchange_group(self.recorder.writer.stamp, exchange)
        try:
            page = read_page(exchange.content, exchange.url, exchange.status)
            return _Fetched(exchange, built, page)
        except Exception as exc:  # whatever reading raises, the page is archived first
            return _Fetched(exchange, built, None, exc)

    def _page(self, pending: Future[_Fetched]) -> RecordsPage:
        """The page once it arrives, archived before what was read of it is used."""
        fetched = pending.result()
        self._archive(fetched)
        if fetched.page is None:
            raise fetched.error or ProtocolError("a list page was neither read nor refused")
        return fetched.page

    def _archive(self, fetched: _Fetched) -> None:
        if fetched.built is None:  # a head that is not ASCII: left to warcio
            self.recorder.exchange(fetched.exchange)
            return
        self.recorder.writer.write_built(fetched.built)

    def _args(self, key: ListKey, from_: str | None) -> dict[str, str]:
        args = {"verb": "ListRecords", "metadataPrefix": key.prefix}
        until = self.settings.until_date and self._day(self.settings.until_date)
        optional = {"from": from_, "until": until, "set": key.set_spec}
        return {**args, **{k: v for k, v in optional.items() if v}}

    def _resume(self, token: str) -> dict[str, str]:
        return {"verb": "ListRecords", "resumptionToken": token}

    def _day(self, datestamp: str) -> str:
        """A datestamp as a ``from`` argument in the repository's granularity."""
        return datestamp[:10] if self.endpoint.granularity == DAY else datestamp


def _name(key: ListKey) -> str:
    return f"list {key.prefix} of set {key.set_spec or '(all)'}"
