"""Two-level crawl scheduling: which host gets the next free fetch slot, and which of its URLs.

Level 1 chooses among the hosts that politeness allows a request *now*; level 2 chooses a URL
from that host's queue (Cao, Jiang & Singh, "Scheduling Web Crawl for Better Performance and
Quality"). Four policies:

- ``bfs``: hosts in turn (round robin over the ready hosts), each serving its oldest URL.
- ``performance``: the ready host with the highest measured pages/s; its oldest URL.
- ``quality``: the best-scored URL of any ready host.
- ``capability``: the ready host with the highest *crawl ability*, its pages/s times the score
  of the URL it would serve next; then that host's best URL. Hosts not yet measured get an
  optimistic prior rate (a configured one, or the best rate measured so far).

A host's pages/s is ``per_host / max((1 + K) * t, delay)``, where ``t = latency +
page_bytes / bytes_per_s`` comes from moving averages of what :meth:`Scheduler.done` reports and
``K`` is the delay factor: for one request at a time that is ``1 / (t + rest)``.

Politeness binds every policy. A host may start a request when it has fewer than ``per_host`` in
flight and ``now >= max(last_start + max(delay, crawl_delay), last_end + K * last_response,
backoff_until)`` (the ``K`` rule is Heritrix's delay factor). Failures (no response, 429, 5xx)
back off exponentially, or for the server's ``Retry-After``, up to ``max_backoff``; a success
resets the backoff. Each host's queue, speed and politeness state is a
:class:`~harvester.crawl.hosts.HostState`.

Every selection costs O(log hosts + log URLs-of-the-host): hosts wait in a *sleeping* heap keyed
by the time they become eligible and move to a policy-keyed *ready* heap when due. Nothing is
ever removed from a heap in place: each host carries a token, renewed whenever it is re-placed,
and an entry with an old token is skipped when it surfaces (lazy deletion). The scheduler does
no I/O and keeps no clock; the caller passes ``now`` from whatever clock it runs on.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

from harvester.crawl.hosts import (
    NEVER,
    Fetched,
    HostState,
    Politeness,
    QueuedURL,
    UrlKey,
    is_failure,
)
from harvester.crawl.scheduler import Scheduler

__all__ = [
    "SCHEDULERS",
    "BreadthFirst",
    "Capability",
    "HostState",
    "Performance",
    "Politeness",
    "Quality",
    "QueuedURL",
    "Scheduler",
    "is_failure",
    "make_scheduler",
]

SCHEDULERS = ("bfs", "performance", "quality", "capability")

HeapEntry = tuple[float, int, int, str]  # (key, host rank, token, host)


class _TwoLevel:
    """The machinery the four policies share (a :class:`Scheduler`); a subclass says how hosts
    and URLs are ranked."""

    keyed_by_queue = False  # whether a host's level-1 key depends on its queued URLs
    keyed_by_rate = False  # whether it is proportional to the host's rate (unmeasured: the prior)

    def __init__(self, politeness: Politeness, score: str, prior: float | None) -> None:
        self.politeness = politeness
        self.score = score
        self.prior = prior
        self._hosts: dict[str, HostState] = {}
        self._sleeping: list[HeapEntry] = []  # keyed by next_allowed
        self._ready: list[HeapEntry] = []  # keyed by _host_key, smallest first
        # Hosts not measured yet, keyed per unit of rate: their key is the prior times this,
        # and the prior grows as hosts are measured, so it is applied when one is chosen.
        self._untried: list[HeapEntry] = []
        self._queued = 0
        self._busy_hosts = 0  # hosts with URLs queued
        self._clock = NEVER  # the latest ``now`` the scheduler was told
        self._best_rate = 0.0

    # -- policy hooks --

    def _url_key(self, item: QueuedURL) -> UrlKey:
        return (0.0, item.seq)  # oldest first

    def _host_key(self, state: HostState) -> float:
        raise NotImplementedError

    # -- the Scheduler interface --

    def add(self, item: QueuedURL) -> None:
        state = self._host(item.host)
        was_empty = not state
        if not state.push(item):
            self._queued += 1
        self._busy_hosts += was_empty
        self._refresh(state, was_empty)

    def next(self, now: float) -> QueuedURL | None:
        self._clock = max(self._clock, now)
        self._wake(now)
        state = self._pop_ready()
        if state is None:
            return None
        item = state.pop()
        self._queued -= 1
        self._busy_hosts -= not state
        state.start(now)
        self._place(state)
        return item

    def wake_time(self) -> float | None:
        if self._ready_heap() is not None:
            return self._clock
        top = _live_top(self._sleeping, self._hosts)
        return None if top is None else max(top[0], self._clock)

    def sent(self, host: str, now: float) -> None:
        state = self._hosts.get(host)
        if state is not None and state.sent(now):
            self._place(state)

    def done(self, host: str, fetch: Fetched) -> None:
        self._clock = max(self._clock, fetch.now)
        state = self._host(host)
        state.finish(fetch)
        if state.rate is not None:
            self._best_rate = max(self._best_rate, state.rate)
        self._place(state)

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        state = self._host(host)
        state.set_crawl_delay(seconds)
        self._place(state)

    def bump(self, url: str, host: str, scores: Mapping[str, float]) -> None:
        state = self._hosts.get(host)
        if state is not None and state.add_scores(url, scores):
            self._refresh(state, False)

    def queued(self, url: str, host: str) -> bool:
        state = self._hosts.get(host)
        return state is not None and url in state

    def waiting(self, url: str, host: str) -> QueuedURL | None:
        state = self._hosts.get(host)
        return None if state is None else state.get(url)

    def __len__(self) -> int:
        return self._queued

    def hosts(self) -> int:
        return self._busy_hosts

    # -- a host handed between workers (crawl/leasing.py) --

    def idle(self, host: str) -> bool:
        """Nothing of ``host`` is in flight."""
        state = self._hosts.get(host)
        return state is None or state.in_flight == 0

    def queued_on(self, host: str) -> int:
        state = self._hosts.get(host)
        return 0 if state is None else len(state)

    def rest(self, host: str, now: float) -> float:
        """Seconds from ``now`` before politeness lets ``host`` be asked again."""
        state = self._hosts.get(host)
        return 0.0 if state is None else max(state.next_allowed() - now, 0.0)

    def not_before(self, host: str, at: float) -> None:
        """Ask ``host`` nothing before ``at`` (the rest its last worker handed over)."""
        state = self._host(host)
        state.backoff_until = max(state.backoff_until, at)
        self._place(state)

    def drop(self, host: str) -> int:
        """Forget ``host``'s queued URLs (they stay queued in the state); how many."""
        state = self._hosts.get(host)
        if state is None or not state:
            return 0
        count = 0
        while state:
            state.pop()
            count += 1
        self._queued -= count
        self._busy_hosts -= 1
        self._place(state)
        return count

    # -- placement --

    def prior_rate(self) -> float:
        """The optimistic rate of a host not yet measured."""
        if self.prior is not None:
            return self.prior
        return self._best_rate or 1.0

    def _host(self, name: str) -> HostState:
        state = self._hosts.get(name)
        if state is None:
            state = HostState(name, len(self._hosts), self.politeness, self._url_key)
            self._hosts[name] = state
        return state

    def _refresh(self, state: HostState, was_empty: bool) -> None:
        """Re-place a host whose queue changed, if that can change where it stands."""
        stands = state.ready_key
        if was_empty or (
            self.keyed_by_queue and stands is not None and self._ready_key(state)[0] != stands
        ):
            self._place(state)

    def _place(self, state: HostState) -> None:
        """Put a host in the heap it belongs to now, invalidating its older entries."""
        state.token += 1
        state.ready_key = None
        if not state or not state.has_slot():
            return  # it comes back when a URL is added or a fetch finishes
        at = state.next_allowed()
        if at <= self._clock:
            self._make_ready(state)
        else:
            _push(self._sleeping, (at, state.rank, state.token, state.name), self._hosts)

    def _ready_key(self, state: HostState) -> tuple[float, list[HeapEntry]]:
        """A ready host's key and heap: per unit of the prior rate while it is unmeasured."""
        if self.keyed_by_rate and state.rate is None:
            return self._host_key(state) / self.prior_rate(), self._untried
        return self._host_key(state), self._ready

    def _make_ready(self, state: HostState) -> None:
        key, heap = self._ready_key(state)
        state.ready_key = key
        _push(heap, (key, state.rank, state.token, state.name), self._hosts)

    def _ready_heap(self) -> list[HeapEntry] | None:
        """The heap whose top host comes first now (the prior applied to unmeasured hosts)."""
        measured = _live_top(self._ready, self._hosts)
        untried = _live_top(self._untried, self._hosts)
        if untried is None:
            return None if measured is None else self._ready
        if measured is None or untried[0] * self.prior_rate() <= measured[0]:
            return self._untried
        return self._ready

    def _wake(self, now: float) -> None:
        """Move the hosts whose rest is over from the sleeping heap to the ready heap."""
        while self._sleeping and self._sleeping[0][0] <= now:
            _, _, token, name = heapq.heappop(self._sleeping)
            state = self._hosts[name]
            if state.token == token:
                self._make_ready(state)

    def _pop_ready(self) -> HostState | None:
        heap = self._ready_heap()
        while heap:
            _, _, token, name = heapq.heappop(heap)
            state = self._hosts[name]
            if state.token == token:
                state.token += 1  # it leaves the ready heap; _place puts it back
                state.ready_key = None
                return state
        return None


def _live(entry: HeapEntry, hosts: Mapping[str, HostState]) -> bool:
    return hosts[entry[3]].token == entry[2]


def _live_top(heap: list[HeapEntry], hosts: Mapping[str, HostState]) -> HeapEntry | None:
    while heap and not _live(heap[0], hosts):
        heapq.heappop(heap)
    return heap[0] if heap else None


def _push(heap: list[HeapEntry], entry: HeapEntry, hosts: Mapping[str, HostState]) -> None:
    """Push, and drop the stale entries once they outnumber the live ones (amortised O(1))."""
    heapq.heappush(heap, entry)
    if len(heap) > 2 * len(hosts) + 64:
        heap[:] = [e for e in heap if _live(e, hosts)]
        heapq.heapify(heap)


class BreadthFirst(_TwoLevel):
    """Discovery order, hosts in turn: a host that becomes ready joins the end of the line."""

    def __init__(self, politeness: Politeness, score: str, prior: float | None) -> None:
        super().__init__(politeness, score, prior)
        self._turn = 0

    def _host_key(self, state: HostState) -> float:
        self._turn += 1
        return float(self._turn)


class Performance(_TwoLevel):
    """The ready host that delivers the most pages per second; its oldest URL."""

    keyed_by_rate = True

    def _host_key(self, state: HostState) -> float:
        return -state.pages_per_s(self.prior_rate())


class Quality(_TwoLevel):
    """The best-scored URL of any ready host: hosts ranked by their best URL's score."""

    keyed_by_queue = True

    def _url_key(self, item: QueuedURL) -> UrlKey:
        return (-item.scores.get(self.score, 0.0), item.seq)

    def _host_key(self, state: HostState) -> float:
        best = state.peek()
        return 0.0 if best is None else -best.scores.get(self.score, 0.0)


class Capability(Quality):
    """The ready host with the most quality per second: pages/s x its best URL's score."""

    keyed_by_rate = True

    def _host_key(self, state: HostState) -> float:
        best = state.peek()
        score = 0.0 if best is None else best.scores.get(self.score, 0.0)
        return -state.pages_per_s(self.prior_rate()) * score


_POLICIES: Mapping[str, Callable[[Politeness, str, float | None], _TwoLevel]] = {
    "bfs": BreadthFirst,
    "performance": Performance,
    "quality": Quality,
    "capability": Capability,
}


def make_scheduler(
    name: str,
    *,
    politeness: Politeness,
    score: str = "quality",
    prior_pages_per_s: float | None = None,
) -> Scheduler:
    """The scheduler called ``name``; ``score`` names the URL score ``quality`` and
    ``capability`` order by; a host not yet measured is assumed to deliver
    ``prior_pages_per_s`` (default: the best rate measured so far, 1.0 before any)."""
    factory = _POLICIES.get(name)
    if factory is None:
        raise ValueError(f"unknown scheduler {name!r}; choose one of {', '.join(SCHEDULERS)}")
    return factory(politeness, score, prior_pages_per_s)
