"""The scheduler interface: what the crawl engine asks of a scheduling policy.

Like Scrapy's scheduler it is small: URLs go in with :meth:`Scheduler.add` and come out with
:meth:`Scheduler.next` once politeness lets their host be asked; :meth:`Scheduler.done` reports
how a fetch went. The policies that implement it are in :mod:`harvester.crawl.twolevel`.
``idle``, ``queued_on``, ``rest``, ``not_before`` and ``drop`` serve a host handed between
workers (:mod:`harvester.crawl.leasing`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from harvester.crawl.hosts import Fetched, QueuedURL

__all__ = ["Scheduler"]


class Scheduler(Protocol):
    """What the crawl engine asks of a scheduling policy."""

    def add(self, item: QueuedURL) -> None:
        """Queue a URL (one already queued is replaced)."""

    def next(self, now: float) -> QueuedURL | None:
        """The URL to fetch now, its host marked in flight; None if no host is eligible now."""

    def wake_time(self) -> float | None:
        """When a host is next eligible (``<=`` the latest ``now`` if one is already); None if
        nothing can become eligible until a fetch finishes (or nothing is queued)."""

    def sent(self, host: str, now: float) -> None:
        """The request of a URL handed out for ``host`` leaves ``now``: the delay between
        request starts counts from here, not from the hand-out, which the event loop may
        have reached late (busy archiving another page)."""

    def done(self, host: str, fetch: Fetched) -> None:
        """A fetch of ``host`` finished, as ``fetch`` tells."""

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """The host's robots.txt Crawl-delay (None: none given)."""

    def bump(self, url: str, host: str, scores: Mapping[str, float]) -> None:
        """Add ``scores`` to a queued URL's scores (a later link brought more); else ignore."""

    def queued(self, url: str, host: str) -> bool:
        """Whether ``url`` (of ``host``) waits in a queue: added, not yet handed out."""

    def waiting(self, url: str, host: str) -> QueuedURL | None:
        """The item of ``url`` (of ``host``) if it waits in a queue, with its scores and
        policy as they are now; None otherwise."""

    def __len__(self) -> int:
        """URLs queued."""

    def idle(self, host: str) -> bool: ...

    def queued_on(self, host: str) -> int: ...

    def rest(self, host: str, now: float) -> float: ...

    def not_before(self, host: str, at: float) -> None: ...

    def drop(self, host: str) -> int: ...

    def hosts(self) -> int:
        """Hosts with URLs queued."""
