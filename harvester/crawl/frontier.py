"""The frontier: every URL the crawl has discovered, persisted, scored, and scheduled.

It joins the scope (what may be crawled), the seen-URL test (is this URL new?), the crawl
policies (favor, default, distrust, inherited along links), the scorer (how valuable), the
state (the persisted queue, so a killed crawl resumes with nothing lost) and the scheduler
(which host next, and which of its URLs). A URL is scored and queued once; later links to it
only add to its score, and when pages of different policies link it, the most trusting
policy wins (:meth:`PolicySet.combine`).

A URL's depth is its shortest known distance from a seed, whatever the order pages are
fetched in: a link to a known URL from a page nearer a seed lowers its depth in the state, and
a page's links are judged from its depth in the state at the moment it is fetched. Once the
crawl is depth-bound (a link unknown so far was refused for depth), a fetched page whose
depth is lowered is queued again, so that the links it was refused are followed; until
then only marked, to be queued again when the crawl becomes depth-bound
(``storage/sqlite/frontier.py``). So one worker or many, in any order, archive one set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

from harvester.crawl.policies import PolicySet
from harvester.crawl.quality import Outlink, PageState, Scorer, distinct
from harvester.crawl.scope import Scope
from harvester.crawl.seen.seenset import SeenSet
from harvester.crawl.twolevel import QueuedURL, Scheduler
from harvester.crawl.urls import canonicalize, host_of_canonical
from harvester.storage.protocol import QueuedRow, State

log = logging.getLogger(__name__)


class Frontier:
    def __init__(
        self,
        site: str,
        state: State,
        *,
        scheduler: Scheduler,
        seen: SeenSet,
        scope: Scope,
        scorer: Scorer,
        policies: PolicySet,
    ) -> None:
        self.site, self.state, self.scheduler, self.seen = site, state, scheduler, seen
        self.scope, self.scorer, self.policies = scope, scorer, policies
        self._seq = 0
        self._distance: dict[str, int] = {}  # link hops since each queued URL's policy began
        self._rescored: dict[str, tuple[dict[str, float], str]] = {}  # written by the step
        # Whether this worker schedules a host's URLs: always, unless the crawl is shared
        # (crawl/leasing.py), when only the hosts it holds; the others' URLs are only queued.
        self.owns: Callable[[str], bool] = lambda host: True
        self.depth_bound = False  # whether a link unknown so far was refused for depth
        # Whether other workers share the state (their links may lower a depth here); else
        # the URLs this frontier lowered while queued are all there is to know.
        self.shared = False
        self._lowered: dict[str, int] = {}

    def open(self, hosts: Collection[str] | None = None) -> int:
        """Load the persisted queue (of ``hosts`` only, if given) into the scheduler; returns
        how many URLs it holds."""
        self._seq = max(self._seq, self.state.max_seq(self.site))
        count = 0
        for row in self.state.queued(self.site, hosts):
            self.seen.add_if_new(row.url)
            self._schedule(row)
            count += 1
        return count

    def seed(self, urls: Iterable[str]) -> int:
        """Queue start URLs (depth 0, each with its seed policy); returns how many were new.

        Seeds pass the scope and trap rules as links do: a seed refused is logged, not queued.
        Call outside a transaction: the seeds are committed on their own before they are seen.
        """
        with self.seen.deferred():
            return len(self._enqueue(self._seed_rows(urls)))

    def _seed_rows(self, urls: Iterable[str]) -> list[QueuedRow]:
        rows = []
        for raw in urls:
            try:
                url = canonicalize(raw)
            except ValueError:
                log.warning("ignoring the seed %r: not an http(s) URL", raw)
                continue
            if self.scope.refusal(url, 0) is not None:
                continue
            policy = self.policies.for_seed(url)
            if self.seen.add_if_new(url):
                rows.append(self._row(url, 0, policy, 0, self.scorer.initial(True, policy), None))
        return rows

    @contextmanager
    def step(self) -> Iterator[None]:
        """One fetched page's state transaction: ``with frontier.step(): ...`` records the
        page and, through :meth:`discovered`, queues its links, all in one commit. The seen
        set persists those links only after the commit, and forgets them if the step fails."""
        try:
            with self.seen.deferred(), self.state.transaction():
                yield
                self.state.rescore((url, *change) for url, change in self._rescored.items())
        finally:
            self._rescored.clear()  # written, or rolled back with the step

    def discovered(self, parent: QueuedURL, links: Sequence[str]) -> list[QueuedRow]:
        """Score a fetched page's links (their canonical URLs, in document order); queue the
        new ones, add to the score of the others.

        Call inside :meth:`step`, the transaction that records the page, so that a page's
        links are persisted together with the fact that it was fetched, and are seen only
        once they are.
        """
        distance = self._distance.pop(parent.url, 0)
        lowered = self._lowered.pop(parent.url, None)
        known = self.state.depth_of(parent.url) if self.shared else lowered
        if known is not None and known < parent.depth:  # a shorter path found meanwhile
            parent = replace(parent, depth=known)
        outlinks = distinct(self._followed(parent, distance, links))
        page = PageState(parent.url, parent.depth, parent.policy, distance, parent.scores)
        gains = self.scorer.on_fetched(page, outlinks)
        rows, seen = [], []
        depth = parent.depth + 1
        for out in outlinks:
            gained = gains.get(out.url, {})
            if self.seen.add_if_new(out.url):
                scores = _add(self.scorer.initial(False, out.policy), gained)
                rows.append(self._row(out.url, depth, out.policy, out.distance, scores, parent.url))
            else:
                seen.append(out.url)
                self._bump(out.url, gained, out.policy)
        added = self._enqueue(rows)
        if len(added) < len(rows):  # queued by another worker meanwhile: known, as the seen
            fresh = {row.url for row in added}
            seen += [row.url for row in rows if row.url not in fresh]
        if seen:
            queued, requeued = self.state.lower_depths(self.site, seen, depth)
            self._lowered.update(dict.fromkeys(queued, depth))
            self._reschedule(requeued)
        return added

    def sweep(self) -> int:
        """Out of work: once the crawl is depth-bound (by any worker), queue again the fetched
        URLs whose depth was lowered meanwhile; how many this worker schedules. Call inside
        :meth:`step`."""
        if not self.depth_bound and not self.state.depth_bound(self.site):
            return 0
        self.depth_bound = True
        return self._reschedule(self.state.mark_depth_bound(self.site))

    def next(self, now: float) -> QueuedURL | None:
        return self.scheduler.next(now)

    def wake_time(self) -> float | None:
        return self.scheduler.wake_time()

    def __len__(self) -> int:
        return len(self.scheduler)

    # -- internals ---------------------------------------------------------------------

    def _followed(self, parent: QueuedURL, distance: int, links: Sequence[str]) -> list[Outlink]:
        """The links the parent's policy follows and the scope admits, with their policies."""
        followed = []
        for url in links:
            policy = self.policies.inherit(parent.policy, url, distance + 1)
            if policy is None:
                continue
            if (reason := self.scope.refusal(url, parent.depth + 1)) is not None:
                if reason.startswith("depth") and not self.depth_bound and url not in self.seen:
                    self._bound()
                continue
            hops = distance + 1 if policy == parent.policy else 0  # a switch starts afresh
            followed.append(Outlink(url, policy, hops))
        return followed

    def _row(
        self,
        url: str,
        depth: int,
        policy: str,
        distance: int,
        scores: Mapping[str, float],
        via: str | None,
    ) -> QueuedRow:
        self._seq += 1
        return QueuedRow(
            url, host_of_canonical(url), depth, policy, distance, dict(scores), self._seq, via
        )

    def _bound(self) -> None:
        """The first link refused for depth: the crawl is depth-bound from now on."""
        self.depth_bound = True
        self._reschedule(self.state.mark_depth_bound(self.site))

    def _reschedule(self, rows: list[QueuedRow]) -> int:
        """Schedule fetched URLs queued again (those of this worker's hosts)."""
        mine = [row for row in rows if self.owns(row.host)]
        for row in mine:
            self._schedule(row)
        return len(mine)

    def _enqueue(self, rows: list[QueuedRow]) -> list[QueuedRow]:
        if not rows:
            return []  # most pages link only to URLs seen before: no statement at all
        added = self.state.enqueue(self.site, rows)
        for row in added:
            if self.owns(row.host):
                self._schedule(row)
        return added

    def _schedule(self, row: QueuedRow) -> None:
        self._distance[row.url] = row.distance
        self.scheduler.add(QueuedURL(row.url, row.host, row.scores, row.depth, row.policy, row.seq))

    def _bump(self, url: str, gained: Mapping[str, float], policy: str) -> None:
        """A later link adds to a queued URL's score; the most trusting policy wins.

        Most links name pages fetched or in flight already: those are left as they are (the
        page in flight was handed out with its scores and policy). A URL still waiting has
        its scores and policy in the scheduler, as the state has them; the new ones are
        written when the step commits, once per URL however many links it got.
        """
        item = self.scheduler.waiting(url, host_of_canonical(url))
        if item is None:
            return
        combined = self.policies.combine(item.policy, policy)
        if combined == item.policy and not gained:
            return
        scores = _add(item.scores, gained)
        self._rescored[url] = (scores, combined)
        if combined != item.policy:
            self._distance[url] = 0  # a switch starts afresh
            self.scheduler.add(replace(item, scores=scores, policy=combined))
        else:
            self.scheduler.bump(url, item.host, gained)


def _add(scores: Mapping[str, float], gained: Mapping[str, float]) -> dict[str, float]:
    total = dict(scores)
    for name, value in gained.items():
        total[name] = total.get(name, 0.0) + value
    return total
