"""The storage seam: what the harvester asks of its state, and the values it gets back.

A state is opened from a URL (:func:`harvester.storage.open_state`): SQLite
(``harvester/storage/sqlite/``) or PostgreSQL (``harvester/storage/postgres/``, which runs the
same SQL and adds the leases of a shared job). Everything else in the harvester talks to a
state through :class:`State` and the frozen values of :mod:`harvester.storage.values`
(re-exported here), never in SQL.

The state stores three things, one protocol each:

- :class:`SourceStore`: per site, its endpoint; per list (endpoint, set, metadataPrefix), its
  bound and position (:class:`ListStore`);
- :class:`ResourceStore`: per resource what was listed, what was archived and where;
- :class:`FrontierStore`: the crawl's every queued URL, with depth, policy, scores and
  discovery order, so a crawl killed at any moment resumes with nothing lost.

Transactions and batches. A call that writes one statement is atomic on its own, so a
harvester killed at any moment leaves the state as it was after the last such call. These
calls hold a transaction of their own:

- :meth:`ResourceStore.record_page`: a page's resources and the list's position after it;
- :meth:`ResourceStore.add_pending`: every URL given;
- :meth:`FrontierStore.requeue_done`: the frontier and the resources of a new crawl cycle;
- :meth:`ListStore.advance`: every list's next bound.

Calls that must be atomic together are wrapped by the caller in ``with state.transaction():``,
which commits all of the block or none of it; neither transactions nor batches nest, so the
calls above are never made inside either. :meth:`FrontierStore.enqueue` writes each row and
its pending resource as separate statements: atomic only inside the caller's transaction. The
crawl wraps a page's mark (:meth:`ResourceStore.mark_archived`, ``mark_failed`` or
``mark_gone``), its :meth:`FrontierStore.dequeue` and its outlinks'
:meth:`FrontierStore.enqueue` in one.

``with state.batch():`` shares one commit among many calls, each whole on its own: a failure
inside keeps what was done before it (only the commit is shared; nothing is rolled back). The
fetch loop marks up to ``commit_every`` (a setting) resources per batch, the didl strategy a
page's. A resource is marked archived only after its WARC records were written out, and a
list's next ``from`` never passes a listed resource still pending.

An implementation for many workers on one job (PostgreSQL, ``storage/postgres/``) keeps these
promises per call and per block, and adds :class:`LeaseStore` (``State.leases``): each host
leased to one worker at a time, with an expiry and a fencing token that every acknowledgement
checks inside the transaction that records the capture. The SQLite one allows one harvester
per collection, which ``harvester/run/lock.py`` ensures; its ``leases`` is None.

Resource statuses::

    pending    listed (new or newer than what was archived), not yet archived
    archived   the listed version is in the WARCs (response, revisit or resource record)
    failed     the last attempt failed (a first 404 or 410, another 4xx, 5xx, network); fetched
               again by a later run once it is :class:`Due` (a wait that doubles with each
               failed attempt), and never holding a list's ``from`` back: the state, not the
               list, keeps it
    abandoned  the listed version failed ``max_attempts`` times: not fetched again until the
               provider lists a newer version
    deleting   listed as deleted; the deletion note is not written yet
    deleted    the deletion note is in the WARCs; earlier captures are kept
    gone       answered 404 or 410 twice in a row (``harvester/failures.py``): a listed version
               is not fetched again, a crawled URL only when a crawl finds its link again;
               earlier captures are kept
    seed       the start URL of a listed harvest (``harvester/listed/seed.py``), not itself listed:
               its last capture, fetched again by every run; no resource of the site's
               counts (:meth:`ResourceStore.counts` leaves it out)

A list's state is ``idle`` (no list under way), ``active`` (under way: its ``from``, the token
of its next page and the responseDate of its first page, saved with every page) or ``listed``
(read to its end, its resources in the state, the run not finished).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from harvester.storage.values import (
    ACTIVE,
    RETRYING,
    Capture,
    Due,
    Header,
    Item,
    Lease,
    Listed,
    ListedPage,
    ListKey,
    ListPosition,
    QueuedRow,
    Resource,
    Source,
)

__all__ = [  # the values are re-exported: the seam is this one module to its users
    "ACTIVE",
    "RETRYING",
    "Capture",
    "Due",
    "FrontierStore",
    "Header",
    "Item",
    "ItemStore",
    "Lease",
    "LeaseStore",
    "ListKey",
    "ListPosition",
    "ListStore",
    "Listed",
    "ListedPage",
    "QueuedRow",
    "Resource",
    "ResourceStore",
    "Source",
    "SourceStore",
    "State",
]


class LeaseStore(Protocol):
    """The leases of a job that many workers share (kind: ``crawl`` or ``fetch`` work)."""

    seconds: float

    def now(self) -> float:
        """The state's clock, which leases use (the workers' clocks never need to agree)."""

    def heartbeat(self, site: str, worker: str) -> int:
        """Say ``worker`` is alive; how many workers of the job are."""

    def leave(self, site: str, worker: str) -> None: ...

    def share(self, site: str, kind: str, workers: int) -> int:
        """How many hosts with work one of ``workers`` live workers may hold."""

    def with_work(self, site: str, kind: str, hosts: Collection[str]) -> set[str]:
        """Those of ``hosts`` with outstanding work in the state."""

    def claim_hosts(self, site: str, worker: str, kind: str, limit: int) -> list[Lease]: ...

    def claim(self, site: str, name: str, worker: str) -> Lease | None: ...

    def renew(self, site: str, leases: Collection[Lease]) -> list[Lease]:
        """Extend ``leases``; those lost meanwhile are returned."""

    def acknowledge(self, site: str, lease: Lease, url: str) -> None:
        """Inside the capture's transaction: LeaseLost unless ``lease`` still holds."""

    def release(self, site: str, lease: Lease, next_at: float = 0.0) -> None: ...

    def held(self, site: str, prefix: str = "host:") -> dict[str, str]:
        """The live leases named ``prefix...`` and their holders."""

    def marked(self, site: str, names: Collection[str]) -> set[str]:
        """Those of ``names`` marked in the job."""

    def mark(self, site: str, name: str) -> None:
        """Note ``name`` once in the job: ``sitemaps:<host>`` (a seed host's robots.txt and
        sitemaps read, their URLs queued), ``mode:crawl`` (the site has no provider)."""


class ListStore(Protocol):
    """Each list's bound and position (``State.lists``)."""

    def position(self, key: ListKey) -> ListPosition: ...

    def start(self, key: ListKey, from_: str | None) -> None: ...

    def page(self, key: ListKey, token: str | None, response_date: str) -> None:
        """The position after a page; the list's responseDate stays its first page's."""

    def finish(self, key: ListKey) -> None: ...

    def forget(self, key: ListKey) -> None:
        """Drop the list under way as if it had never started; its bound stays."""

    def advance(self, keys: list[ListKey], oldest_unarchived: str | None) -> None:
        """In one transaction, each listed list's next ``from``: its own responseDate, held
        back to ``oldest_unarchived``; a list that delivered nothing keeps its bound."""

    def started(self, keys: list[ListKey]) -> str | None:
        """The earliest responseDate of these lists under way or listed."""

    def known(self) -> list[ListKey]:
        """Every list the state has a row for (for the commands that look at a collection)."""


class SourceStore(Protocol):
    @property
    def lists(self) -> ListStore: ...

    def source(self, site: str) -> Source | None: ...

    def record_endpoint(self, site: str, endpoint: str, granularity: str, deleted: str) -> None: ...


class ResourceStore(Protocol):
    def record_page(self, site: str, page: ListedPage) -> tuple[int, int]:
        """A page's headers and its list's position after it, in one transaction; how many
        resources became pending and how many deletions were noted."""

    def add_pending(self, site: str, urls: Iterable[str]) -> int: ...

    def resources(
        self, site: str, statuses: tuple[str, ...], batch: int = 1000, due: Due | None = None
    ) -> Iterator[Resource]:
        """In URL order, read in batches of ``batch``; with ``due``, failed ones only once
        their wait is over."""

    def get(self, url: str) -> Resource | None: ...

    def mark_archived(self, url: str, capture: Capture, datestamp: str | None) -> None: ...

    def mark_failed(self, url: str, error: str, http_status: int | None = None) -> None: ...

    def abandon(self, url: str, error: str, http_status: int | None = None) -> None: ...

    def note(self, url: str, text: str) -> None: ...

    def mark_deleted(self, url: str) -> None: ...

    def mark_gone(self, url: str, http_status: int) -> None: ...

    def remember_capture(self, url: str, capture: Capture) -> None: ...

    def remember_seed(self, site: str, url: str, capture: Capture) -> None:
        """Keep ``capture`` as the last of the site's start URL (status ``seed``); a row a
        list made for that URL is left alone."""

    def remember_loaded(self, site: str, url: str, capture: Capture) -> None:
        """Keep ``capture`` as the last of a resource a page loaded in the browser (status
        ``loaded``, none of the site's resources), for the next run's revisit of it; a row
        a list or the crawl made for that URL is left alone."""

    def known_record_ids(self, record_ids: Iterable[str]) -> set[str]: ...

    def count(self, site: str, statuses: tuple[str, ...], due: Due | None = None) -> int: ...

    def counts(self, site: str) -> dict[str, int]: ...

    def oldest_unarchived(self, site: str) -> str | None: ...

    def sites(self) -> list[str]:
        """Every site the collection holds resources of, or an endpoint for."""

    def failures(self, site: str) -> Iterator[tuple[str, int | None, str | None]]:
        """(status, HTTP status, last error) of each failed, abandoned or gone resource."""

    def captures_by_worker(self, site: str) -> dict[str, int]:
        """Archived (or deleted) resources per worker that archived them last; for
        ``harvester status``."""


class FrontierStore(Protocol):
    def enqueue(self, site: str, rows: Iterable[QueuedRow]) -> list[QueuedRow]:
        """Queue URLs never queued before, each also a pending resource; those added."""

    def queued(self, site: str, hosts: Collection[str] | None = None) -> Iterator[QueuedRow]:
        """The queued URLs in discovery order; with ``hosts``, of those hosts only."""

    def dequeue(self, url: str) -> None: ...

    def rescore(self, changes: Iterable[tuple[str, dict[str, float], str]]) -> None:
        """Store queued URLs' new (url, scores, policy); a URL no longer queued is left."""

    def requeue_done(self, site: str) -> int: ...

    def max_seq(self, site: str) -> int: ...

    def depth_of(self, url: str) -> int | None:
        """The URL's depth: its shortest known distance from a seed."""

    def lower_depths(
        self, site: str, urls: Collection[str], depth: int
    ) -> tuple[list[str], list[QueuedRow]]:
        """Give those of ``urls`` deeper than ``depth`` that depth: (the queued URLs lowered,
        those fetched already and queued again when the crawl is depth-bound)."""

    def depth_bound(self, site: str) -> bool:
        """Whether the crawl ever refused a link for its depth."""

    def mark_depth_bound(self, site: str) -> list[QueuedRow]:
        """Say so; the fetched URLs whose depth was lowered meanwhile, queued again."""


class ItemStore(Protocol):
    """Records mode's items, their formats and linked resources (``State.items``)."""

    def note(self, endpoint: str, prefix: str, header: Header, metadata: bytes) -> str:
        """Store one listed record inside the page's transaction: new, changed, deleted or
        unchanged."""

    def note_page(
        self, endpoint: str, prefix: str, records: Sequence[tuple[Header, bytes]]
    ) -> list[str]:
        """A page's records, as ``note`` would store them one after another."""

    def formats_of(
        self, endpoint: str, ids: Sequence[str]
    ) -> dict[str, list[tuple[str, bytes]]]: ...

    def settle_many(self, endpoint: str, settled: Sequence[tuple[str, str, str]]) -> None: ...

    def unsettled(self, endpoint: str, before: float, batch: int = 500) -> Iterator[Item]: ...

    def get(self, endpoint: str, identifier: str) -> Item | None: ...

    def formats(self, endpoint: str, identifier: str) -> list[tuple[str, bytes]]: ...

    def settle(self, endpoint: str, identifier: str, status: str, record_id: str) -> None: ...

    def linked(self, url: str) -> tuple[str, str | None, list[tuple[str, str]]] | None: ...

    def note_linked(
        self, url: str, record_type: str, mime: str | None, links: list[tuple[str, str]] | None
    ) -> None: ...

    def records_mode(self, endpoint: str) -> bool | None: ...

    def decide_mode(self, endpoint: str, records: bool) -> None: ...

    def add_resource(self, site: str, url: str) -> None: ...

    def counts(self, endpoint: str) -> dict[str, int]: ...


class State(SourceStore, ResourceStore, FrontierStore, Protocol):
    """A collection's whole state; opened and closed around a run."""

    url: str  # where it is, as given to open_state
    leases: LeaseStore | None  # None: one harvester per collection

    @property
    def items(self) -> ItemStore: ...

    @property
    def db(self) -> Any:
        """The connection, for a table kept beside the state's (the watch's revisits)."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> State: ...

    def __exit__(self, *exc: object) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """One atomic step: all of the block, or none of it."""

    def batch(self) -> AbstractContextManager[None]:
        """Many steps, one commit (see the module docstring)."""
