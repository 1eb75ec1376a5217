"""The values the state stores and hands back, and the status groups; the interfaces that take
and give them are :mod:`harvester.storage.protocol`'s, which re-exports them.

The values are frozen, but those made once per fetched resource (:class:`Listed`,
:class:`Resource`, :class:`Capture`), like the exchange and record values of the fetch path,
are slotted dataclasses instead: a frozen dataclass sets each field through
``object.__setattr__``, 4 to 7 times the cost of a plain one (``bench/README.md``, ``## harvest``).
Nothing changes them after they are made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

ACTIVE = ("pending", "failed")  # to be fetched (a failed one once its retry time has come)
RETRYING = ("failed", "abandoned", "gone")  # a listed version not fetched again, or not now


class Header(Protocol):
    """What the state keeps of a listed record's header (OAI-PMH §2.5): the OAI-PMH client's
    ``ListedHeader`` is one, and the state needs no more of the protocol than this."""

    @property
    def identifier(self) -> str: ...

    @property
    def datestamp(self) -> str: ...

    @property
    def set_specs(self) -> tuple[str, ...]: ...

    @property
    def deleted(self) -> bool: ...


@dataclass(frozen=True)
class Source:
    site: str
    endpoint: str | None
    granularity: str | None
    deleted_record: str | None


@dataclass(frozen=True)
class ListKey:
    endpoint: str
    set_spec: str | None
    prefix: str

    @property
    def columns(self) -> tuple[str, str, str]:
        return self.endpoint, self.set_spec or "", self.prefix


@dataclass(frozen=True)
class ListPosition:
    harvested_until: str | None  # its own bound, else the endpoint's bound carried over
    from_: str | None
    token: str | None
    response_date: str | None
    state: str  # idle | active | listed


@dataclass(slots=True)
class Listed:
    """One header of a list, as the state needs it."""

    url: str
    identifier: str
    datestamp: str
    set_specs: tuple[str, ...]
    deleted: bool


@dataclass(frozen=True)
class ListedPage:
    """One page of list ``key``: its headers, and the list's position after it (``token``,
    None at its end, and the page's ``response_date``)."""

    key: ListKey
    headers: Sequence[Listed]
    token: str | None
    response_date: str


@dataclass(slots=True)
class Resource:
    """What the state knows of one URL; ``Resource(url)`` is one it knows nothing of yet (no
    listing, no capture, no validators)."""

    url: str
    oai_identifier: str | None = None
    listed_datestamp: str | None = None
    archived_datestamp: str | None = None
    set_specs: tuple[str, ...] = ()
    status: str = "pending"
    etag: str | None = None
    last_modified: str | None = None
    payload_digest: str | None = None
    sha1: str | None = None
    sha256: str | None = None
    record_id: str | None = None
    warc_file: str | None = None
    warc_offset: int | None = None
    warc_length: int | None = None
    warc_date: str | None = None
    attempts: int = 0
    http_status: int | None = None  # of the last capture or failed attempt


@dataclass(slots=True)
class Capture:
    """Where and what was archived for one resource."""

    record_id: str
    warc_file: str
    warc_offset: int
    warc_length: int
    warc_date: str
    http_status: int | None
    etag: str | None
    last_modified: str | None
    payload_digest: str | None
    sha1: str | None
    sha256: str | None


@dataclass(frozen=True)
class Due:
    """Which failed resources may be fetched again at ``now``: those whose last failure was
    at least ``delay * 2 ** (attempts - 1)`` seconds before (pending ones always are)."""

    now: float
    delay: float


@dataclass(frozen=True)
class QueuedRow:
    """A frontier row: a URL the crawl has discovered and means to fetch."""

    url: str
    host: str
    depth: int
    policy: str
    distance: int
    scores: dict[str, float]
    seq: int
    via: str | None


@dataclass(frozen=True)
class Lease:
    """A host (``host:<host>``) or an endpoint's lists (``list:<endpoint>``), held by one
    worker until it releases it or ``LeaseStore.seconds`` pass without a renewal."""

    name: str
    worker: str
    token: int  # the fencing token: one more at every claim of the name
    next_at: float  # no request before this (the state's clock), handed over at release

    @property
    def host(self) -> str:
        return self.name.removeprefix("host:")


@dataclass(frozen=True)
class Item:
    """A record of a repository ingested in records mode (``harvester/records/``)."""

    identifier: str
    datestamp: str
    set_specs: tuple[str, ...]
    status: str
    didl_record_id: str | None
