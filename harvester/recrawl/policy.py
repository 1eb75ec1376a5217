"""Revisit policies: which URL to visit next, and when, at a budget of ``rate`` fetches a second.

One small interface (:class:`RevisitPolicy`): :meth:`~RevisitPolicy.add` a URL (with what was
learned of it before, on a restart), ask :meth:`~RevisitPolicy.next` for the URL due first
and :meth:`~RevisitPolicy.at` for when to fetch it, and report each
:meth:`~RevisitPolicy.visited`. Every policy orders URLs by a due time kept in a heap; the
interval policies (``uniform``, ``nutch``) spend a budget left over early on the URL due
first (work-conserving), the rate policies wait for due times that add up to the budget.
Per-URL :class:`Bounds` clamp every interval; their default floor follows from the budget and
the watch (:meth:`Bounds.resolved`): a second at most, and never more than the round-robin
cycle (URLs / rate), so no URL is ever kept from being revisited as often as a round-robin
loop at the same budget would revisit it.

- ``uniform``: the same interval for every URL, ``len(urls) / rate`` (round robin).
- ``proportional``: Cho & Garcia-Molina's proportional policy ("Effective page refresh
  policies for Web crawlers", ACM TODS 28(4), 2003): a URL's interval is inversely
  proportional to its estimated change rate, here from changed/unchanged visits alone.
- ``nutch``: Nutch's ``AdaptiveFetchSchedule`` with the defaults of ``nutch-default.xml``:
  the interval shrinks by ``dec_rate`` 0.2 after a change and grows by ``inc_rate`` 0.4
  otherwise; with ``sync_delta`` the interval is at least the time since ``Last-Modified``
  and the next fetch is counted from ``fetch - 0.3 * delta`` (``sync_delta_rate``); bounds
  60 s and 365 days; the first interval is the uniform one (Nutch's is
  ``db.fetch.interval.default``, 30 days, meaningless against a budget).
- ``adaptive`` (ours): greedy on the expected number of new versions a fetch archives, the
  probability ``1 - exp(-r * age)`` that the page changed since the last visit. Maximising
  the versions captured, ``sum f_i (1 - exp(-r_i / f_i))`` under ``sum f_i = rate``, is
  concave; its Lagrange condition ``1 - (1 + x) exp(-x) = mu`` with ``x = r_i / f_i`` makes
  ``x`` the same for every changing page. Cho & Garcia-Molina's optimal allocation for this
  objective is therefore "visit each page when ``r * age`` reaches one threshold", and the
  greedy rule that fetches the page most likely to have changed reaches it: a URL is due at
  ``last + theta / r``, ``theta`` solved so the clamped intervals spend the budget
  (:func:`threshold`). Rates come from :func:`estimate` (``Last-Modified`` when the server
  sends it) shrunk toward the population's mean (:func:`shrunk`, a gamma prior), so two or
  three lucky visits do not pin a page at its minimum interval; an unsure estimate is kept
  from zero by a weak prior, half a change over the time observed plus one uniform interval,
  so a page seen unchanged a few times is still checked now and then before its maximum
  interval. When the budget has a fetch to spare and no URL is due, the URL with the largest
  expected gain now (:meth:`RatePolicy.pick`) is fetched early: the budget is spent whenever
  some page's expected gain is positive.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from harvester.recrawl.bounds import AUTO, AUTO_FLOOR, Bounds, threshold
from harvester.recrawl.estimate import History, Pool, estimate, rate_changed, shrunk

__all__ = ["AUTO", "AUTO_FLOOR", "POLICIES", "Bounds", "Entry", "HeapPolicy", "Visit"]

POLICIES = ("adaptive", "uniform", "proportional", "nutch")
NUTCH_INC_RATE = 0.4  # db.fetch.schedule.adaptive.inc_rate
NUTCH_DEC_RATE = 0.2  # db.fetch.schedule.adaptive.dec_rate
NUTCH_SYNC_DELTA_RATE = 0.3  # db.fetch.schedule.adaptive.sync_delta_rate
NUTCH_MIN_INTERVAL = 60.0  # db.fetch.schedule.adaptive.min_interval (s)
NUTCH_MAX_INTERVAL = 365 * 86400.0  # db.fetch.schedule.adaptive.max_interval (s)
PRIOR_SHAPE = 1.0  # the adaptive policy's gamma prior is worth one change seen


@dataclass(frozen=True)
class Visit:
    """What one fetch saw: when, whether the page changed, and its ``Last-Modified`` (epoch s)."""

    at: float
    changed: bool
    last_modified: float | None = None


@dataclass(frozen=True)
class Entry:
    """What a policy knows of one URL; the watch keeps it in the state between runs."""

    url: str
    bounds: Bounds
    history: History = field(default_factory=History)
    last: float | None = None  # the last fetch
    due: float = 0.0
    interval: float = 0.0  # the nutch policy's current interval (0: not set yet)
    modified: float | None = None  # the last Last-Modified (or change) seen
    weight: float = 1.0  # the rate policies count its changes this many times


class RevisitPolicy(Protocol):
    """Which URL next, and when."""

    name: str

    def add(self, entry: Entry) -> None:
        """Watch ``entry.url``, due at ``entry.due`` (now, for a URL never fetched)."""

    def next(self) -> Entry | None:
        """The URL due first, or None."""

    def at(self, entry: Entry) -> float:
        """When to fetch ``entry``, budget permitting: its due time, or, for a policy that
        spends a budget left over early (work-conserving), as soon as its bounds allow."""

    def pick(self, now: float) -> Entry | None:
        """The URL to fetch now, a fetch of the budget in hand; None to wait (:meth:`at`)."""

    def visited(self, url: str, visit: Visit) -> Entry:
        """Learn from a fetch of ``url``; return its new entry (with its next due time)."""

    def entries(self) -> Iterator[Entry]:
        """Every URL watched."""


class HeapPolicy:
    """The due-time heap every policy shares; subclasses set :meth:`_due_after`."""

    name = "base"
    work_conserving = True

    def __init__(self, rate: float) -> None:
        if rate <= 0:
            raise ValueError("the revisit rate must be positive")
        self.rate = rate
        self._entries: dict[str, Entry] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = 0

    def add(self, entry: Entry) -> None:
        self._entries[entry.url] = entry
        self._push(entry)

    def next(self) -> Entry | None:
        while self._heap:
            due, _seq, url = self._heap[0]
            entry = self._entries.get(url)
            if entry is not None and entry.due == due:
                return entry
            heapq.heappop(self._heap)  # superseded by a later push
        return None

    def at(self, entry: Entry) -> float:
        allowed = self.allowed(entry)
        return allowed if self.work_conserving else max(entry.due, allowed)

    def pick(self, now: float) -> Entry | None:
        """The URL to fetch now, with a fetch of the budget in hand: the one due first, if
        its time has come (:meth:`at`); None to wait for it."""
        entry = self.next()
        return entry if entry is not None and self.at(entry) <= now else None

    def bounds(self, entry: Entry) -> Bounds:
        """``entry``'s bounds, the default floor resolved for the watch as it stands."""
        return entry.bounds.resolved(self.uniform_interval())

    def allowed(self, entry: Entry) -> float:
        """The earliest time the bounds let ``entry`` be fetched: its due time when it was
        never fetched, else its minimum interval after the last fetch."""
        if entry.last is None:
            return entry.due
        return entry.last + self.bounds(entry).min_interval

    def visited(self, url: str, visit: Visit) -> Entry:
        old = self._entries[url]
        history = old.history
        if old.last is not None:
            history = history.seen(visit.at - old.last, visit.changed, _since(old, visit))
        entry = replace(old, history=history, last=visit.at, modified=_modified(old, visit))
        entry = self._due_after(old, entry, visit)
        self._entries[url] = entry
        self._push(entry)
        return entry

    def entries(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def _push(self, entry: Entry) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (entry.due, self._seq, entry.url))

    def _due_after(self, old: Entry, entry: Entry, visit: Visit) -> Entry:
        raise NotImplementedError

    def uniform_interval(self) -> float:
        return max(len(self._entries), 1) / self.rate


class UniformPolicy(HeapPolicy):
    name = "uniform"

    def _due_after(self, old: Entry, entry: Entry, visit: Visit) -> Entry:
        return replace(entry, due=visit.at + self.bounds(entry).clamp(self.uniform_interval()))


class RatePolicy(HeapPolicy):
    """Due when ``rate * age`` reaches ``theta``, the one threshold whose intervals, clamped to
    their bounds, add up to the budget (:func:`threshold`).

    Not work-conserving: fetching a URL early because the budget is free would rank it by
    when it reaches ``theta``, not by how likely it is to have changed now, and keep
    re-fetching the URL with the shortest interval. Instead the budget is kept spent by
    solving ``theta`` again, with every URL's rate as it stands (a URL not revisited yet at
    :meth:`first_rate`) and every due time moved to match, once the rates have moved: after
    every visit on a small watch, every ``len / 8`` visits (or URLs added) on a large one."""

    work_conserving = False

    def __init__(self, rate: float, rate_of: Callable[[History], float], prior: bool) -> None:
        super().__init__(rate)
        self.rate_of = rate_of
        self.prior = prior
        self._theta = 1.0
        self._stale = 0

    def add(self, entry: Entry) -> None:
        super().add(entry)
        self._stale += 1

    def estimate(self, history: History) -> float:
        return self.rate_of(history)

    def first_rate(self) -> float:
        """The rate of a URL never revisited: that of the uniform interval."""
        return 1 / self.uniform_interval()

    def rate_of_entry(self, entry: Entry) -> float:
        h = entry.history
        rate = self.estimate(h) if h.visits else self.first_rate()
        if self.prior:
            rate = max(rate, 0.5 / (h.observed + self.uniform_interval()))
        return rate * entry.weight

    def theta(self) -> float:
        return self._theta

    def _due_after(self, old: Entry, entry: Entry, visit: Visit) -> Entry:
        self._stale += 1
        if self._stale > len(self._entries) // 8:
            self._entries[entry.url] = entry
            self._reschedule()
            return self._entries[entry.url]
        return replace(entry, due=self._due(entry, self.rate_of_entry(entry)))

    def _due(self, entry: Entry, rate: float) -> float:
        interval = self._theta / rate if rate > 0 else math.inf
        last = entry.due if entry.last is None else entry.last
        return last + self.bounds(entry).clamp(interval) if entry.last is not None else last

    def pick(self, now: float) -> Entry | None:
        """The URL due first if its time has come; else, the budget being free, the URL
        past its floor with the largest expected gain now, ``weight * (1 - exp(-r * age))``
        (any positive gain: a fetch not spent is lost)."""
        entry = super().pick(now)
        if entry is not None:
            return entry
        best, gain = None, 0.0
        for candidate in self._entries.values():
            if candidate.last is None or self.allowed(candidate) > now:
                continue
            value = -math.expm1(-self.rate_of_entry(candidate) * (now - candidate.last))
            if value > gain:
                best, gain = candidate, value
        return best

    def _reschedule(self) -> None:
        """Solve ``theta`` for the rates as they stand and move every due time to match."""
        rates = {url: self.rate_of_entry(e) for url, e in self._entries.items()}
        bounds = {url: self.bounds(e) for url, e in self._entries.items()}
        self._theta = threshold(rates, bounds, self.rate)
        for url, entry in self._entries.items():
            due = self._due(entry, rates[url])
            if due != entry.due:
                self._entries[url] = replace(entry, due=due)
        self._heap = [(e.due, i, url) for i, (url, e) in enumerate(self._entries.items())]
        heapq.heapify(self._heap)
        self._seq = len(self._heap)
        self._stale = 0


class ProportionalPolicy(RatePolicy):
    name = "proportional"

    def __init__(self, rate: float) -> None:
        super().__init__(rate, _changed_only, prior=False)


class AdaptivePolicy(RatePolicy):
    """Rates shrunk toward the population's (:func:`shrunk`, a gamma prior of shape
    :data:`PRIOR_SHAPE` whose mean is the mean of every revisited URL's estimate)."""

    name = "adaptive"

    def __init__(self, rate: float) -> None:
        super().__init__(rate, estimate, prior=True)
        self.pool = Pool()

    def add(self, entry: Entry) -> None:
        old = self._entries.get(entry.url)
        self.pool.replace(old.history if old else History(), entry.history)
        super().add(entry)

    def estimate(self, history: History) -> float:
        return shrunk(history, self.pool.prior(PRIOR_SHAPE))

    def first_rate(self) -> float:
        """The population's mean rate, once a URL has been revisited (else the uniform one)."""
        return self.pool.prior(PRIOR_SHAPE).mean or super().first_rate()

    def _due_after(self, old: Entry, entry: Entry, visit: Visit) -> Entry:
        self.pool.replace(old.history, entry.history)
        return super()._due_after(old, entry, visit)


class NutchPolicy(HeapPolicy):
    """Nutch's ``AdaptiveFetchSchedule.setFetchSchedule`` with its default parameters."""

    name = "nutch"

    def _due_after(self, old: Entry, entry: Entry, visit: Visit) -> Entry:
        interval = old.interval or self.uniform_interval()
        if old.last is not None:
            interval *= (1 - NUTCH_DEC_RATE) if visit.changed else (1 + NUTCH_INC_RATE)
        modified = entry.modified if entry.modified is not None else visit.at
        delta = max(visit.at - modified, 0.0)
        interval = max(interval, delta)  # sync_delta
        reference = visit.at - round(delta * NUTCH_SYNC_DELTA_RATE)
        interval = min(max(interval, NUTCH_MIN_INTERVAL), NUTCH_MAX_INTERVAL)
        bounds = self.bounds(entry)
        due = max(reference + interval, visit.at + bounds.min_interval)
        return replace(entry, interval=interval, due=min(due, visit.at + bounds.max_interval))


def make_policy(name: str, rate: float) -> HeapPolicy:
    """The policy called ``name`` (one of :data:`POLICIES`) at ``rate`` fetches a second."""
    kinds: dict[str, Callable[[float], HeapPolicy]] = {
        "adaptive": AdaptivePolicy,
        "uniform": UniformPolicy,
        "proportional": ProportionalPolicy,
        "nutch": NutchPolicy,
    }
    if name not in kinds:
        raise ValueError(f"revisit policy must be one of {', '.join(POLICIES)}, not {name!r}")
    return kinds[name](rate)


def _changed_only(history: History) -> float:
    mean = history.observed / history.visits if history.visits else 0.0
    return rate_changed(history.visits, history.changes, mean)


def _since(old: Entry, visit: Visit) -> float | None:
    """Seconds from ``Last-Modified`` to the visit, when it agrees with what the visit saw:
    not in the future, after the last visit for a change, and unmoved without one."""
    lm = visit.last_modified
    if lm is None or lm > visit.at or old.last is None:
        return None
    if visit.changed and lm < old.last:
        return None
    if not visit.changed and old.modified is not None and lm != old.modified:
        return None
    return visit.at - lm


def _modified(old: Entry, visit: Visit) -> float | None:
    if visit.last_modified is not None and visit.last_modified <= visit.at:
        return visit.last_modified
    return visit.at if visit.changed or old.modified is None else old.modified
