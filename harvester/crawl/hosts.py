"""Hosts as the crawl scheduler sees them: each one's queue, measured speed and politeness.

A :class:`HostState` holds one host's queue of :class:`QueuedURL` (the scheduler's level 2,
ordered by a key the policy supplies), moving averages of its latency, page size and bandwidth,
and the times its :class:`Politeness` counts from. A host may start a request when it has fewer
than ``per_host`` in flight and ``now >= max(last_start + max(delay, crawl_delay), last_end +
K * last_response, backoff_until)``, ``K`` being the delay factor (Heritrix's). Failures (no
response, 429, 5xx) back off exponentially, or for the server's ``Retry-After``, up to
``max_backoff``; a success resets the backoff. Its pages/s is ``per_host / ((1 + K) * t)``,
capped by one request per ``max(delay, crawl_delay)``, with ``t = latency + page_bytes /
bytes_per_s``.

Like the scheduler, a host does no I/O and keeps no clock: every ``now`` is the caller's.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "NEVER",
    "Fetched",
    "HostState",
    "Politeness",
    "QueuedURL",
    "UrlKey",
    "is_failure",
]

EWMA_ALPHA = 0.3  # weight of the newest sample in the moving averages
MIN_SERVICE_S = 1e-3  # a fetch never counts as faster than this, so rates stay finite
MIN_TRANSFER_S = 1e-4  # shorter body transfers say nothing about bandwidth
NEVER = -math.inf

UrlKey = tuple[float, int]  # (primary, seq): smaller is served first


@dataclass(frozen=True)
class QueuedURL:
    """A URL waiting to be fetched, with the named scores the policies can order by."""

    url: str
    host: str
    scores: Mapping[str, float]
    depth: int = 0
    policy: str = "default"
    seq: int = 0  # discovery order

    def score(self, name: str) -> float:
        return float(self.scores.get(name, 0.0))


@dataclass(frozen=True)
class Politeness:
    """How hard one host may be pressed."""

    delay: float = 0.0  # minimum seconds between requests leaving (--delay)
    delay_factor: float = 1.0  # rest at least K times the last response time (--delay-factor)
    per_host: int = 1  # concurrent requests per host
    max_backoff: float = 300.0  # the longest a failing host is rested
    backoff_base: float = 1.0  # the first backoff; it doubles with each further failure

    def __post_init__(self) -> None:
        for name in ("delay", "delay_factor", "max_backoff", "backoff_base"):
            if getattr(self, name) < 0:
                raise ValueError(f"Politeness.{name} must be >= 0, not {getattr(self, name)}")
        if self.per_host < 1:
            raise ValueError(f"Politeness.per_host must be >= 1, not {self.per_host}")


def is_failure(status: int | None) -> bool:
    """Whether a response says the host is struggling: no response, 429 or a 5xx."""
    return status is None or status == 429 or status >= 500


def _ewma(old: float | None, sample: float) -> float:
    return sample if old is None else old + EWMA_ALPHA * (sample - old)


@dataclass(frozen=True)
class Fetched:
    """How one fetch of a host went: when it ended (``now``), the seconds until its response
    started, the body's bytes, its status (None: no response), the server's ``Retry-After``,
    and the seconds it took when the fetcher timed it itself (else: from its hand-out to
    ``now``)."""

    now: float
    latency: float
    nbytes: int
    status: int | None
    retry_after: float | None = None
    took: float | None = None


@dataclass
class _Timing:
    """A host's measured speed (moving averages) and the times politeness counts from."""

    latency: float | None = None  # seconds until the response starts
    page_bytes: float | None = None
    bytes_per_s: float | None = None
    last_start: float = NEVER
    last_end: float = NEVER
    last_response: float = 0.0  # the whole last fetch, start to last byte
    starts: deque[float] = field(default_factory=deque)

    def record(self, fetch: Fetched) -> None:
        """A fetch ended: its duration counts from its start (its hand-out) unless it was
        timed by the fetcher."""
        now, latency, nbytes = fetch.now, fetch.latency, fetch.nbytes
        started = self.starts.popleft() if self.starts else now - latency
        duration = max(now - started if fetch.took is None else fetch.took, latency, 0.0)
        self.latency = _ewma(self.latency, max(latency, 0.0))
        self.page_bytes = _ewma(self.page_bytes, max(nbytes, 0))
        transfer = duration - latency
        if nbytes > 0 and transfer > MIN_TRANSFER_S:
            self.bytes_per_s = _ewma(self.bytes_per_s, nbytes / transfer)
        self.last_end = now
        self.last_response = duration

    def service_time(self) -> float | None:
        """Expected seconds one fetch occupies a slot: latency + size / bandwidth."""
        if self.latency is None:
            return None
        transfer = (self.page_bytes or 0.0) / self.bytes_per_s if self.bytes_per_s else 0.0
        return max(self.latency + transfer, MIN_SERVICE_S)


class HostState:
    """One host: its queue of URLs (level 2), its measured speed and its politeness state."""

    def __init__(
        self, name: str, rank: int, politeness: Politeness, url_key: Callable[[QueuedURL], UrlKey]
    ) -> None:
        self.name = name
        self.rank = rank  # first-seen order: the deterministic tie-break between hosts
        self.politeness = politeness
        self.timing = _Timing()
        self.in_flight = 0
        self.crawl_delay = 0.0
        self.rate: float | None = None  # measured pages/s, rests included
        self.failures = 0
        self.backoff_until = NEVER
        self.token = 0  # renewed at every placement; heap entries with an older one are stale
        self.ready_key: float | None = None  # the key of its live ready-heap entry, if any
        self._url_key = url_key
        self._heap: list[tuple[UrlKey, str]] = []
        self._items: dict[str, QueuedURL] = {}
        self._keys: dict[str, UrlKey] = {}  # a heap entry whose key differs is stale

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, url: object) -> bool:
        return url in self._items

    def get(self, url: str) -> QueuedURL | None:
        """The queued item of ``url``, or None if it is not queued here."""
        return self._items.get(url)

    # -- level 2: the host's own queue --

    def push(self, item: QueuedURL) -> bool:
        """Queue ``item``, replacing a queued URL of the same name; True if it replaced one."""
        url, key = item.url, self._url_key(item)
        old = self._keys.get(url)
        self._items[url] = item
        if old == key:
            return True  # its heap entry still stands
        self._keys[url] = key
        heapq.heappush(self._heap, (key, url))
        if len(self._heap) > 2 * len(self._items) + 32:
            self._heap = [(key, url) for url, key in self._keys.items()]
            heapq.heapify(self._heap)
        return old is not None

    def add_scores(self, url: str, deltas: Mapping[str, float]) -> bool:
        """Add ``deltas`` to a queued URL's scores; False if the URL is not queued here."""
        item = self._items.get(url)
        if item is None:
            return False
        scores = dict(item.scores)
        for name, delta in deltas.items():
            scores[name] = scores.get(name, 0.0) + delta
        # as dataclasses.replace would make it, at a third of its cost (links bump often)
        self.push(QueuedURL(item.url, item.host, scores, item.depth, item.policy, item.seq))
        return True

    def peek(self) -> QueuedURL | None:
        """The URL level 2 would serve next."""
        heap, keys = self._heap, self._keys
        while heap:
            key, url = heap[0]
            if keys.get(url) == key:
                return self._items[url]
            heapq.heappop(heap)  # stale: bumped since, or already served
        return None

    def pop(self) -> QueuedURL:
        item = self.peek()
        if item is None:
            raise IndexError(f"no URL queued for host {self.name!r}")
        heapq.heappop(self._heap)
        del self._items[item.url], self._keys[item.url]
        return item

    # -- politeness and measurement --

    def start(self, now: float) -> None:
        self.in_flight += 1
        self.timing.starts.append(now)
        self.timing.last_start = now

    def sent(self, now: float) -> bool:
        """The request handed out last leaves ``now``; whether that moves the time the
        delay counts from."""
        if now <= self.timing.last_start:
            return False
        self.timing.last_start = now
        return True

    def finish(self, fetch: Fetched) -> None:
        """A fetch ended; one the scheduler did not hand out (robots.txt) counts as well."""
        self.in_flight = max(self.in_flight - 1, 0)
        self.timing.record(fetch)
        self.rate = self._measured_rate()
        if not is_failure(fetch.status):
            self.failures, self.backoff_until = 0, NEVER
            return
        self.failures += 1
        exponential = self.politeness.backoff_base * 2.0 ** min(self.failures - 1, 60)
        wait = exponential if fetch.retry_after is None else max(fetch.retry_after, 0.0)
        self.backoff_until = fetch.now + min(wait, self.politeness.max_backoff)

    def has_slot(self) -> bool:
        return self.in_flight < self.politeness.per_host

    def next_allowed(self) -> float:
        """The earliest time politeness lets this host start another request."""
        p, t = self.politeness, self.timing
        return max(
            t.last_start + max(p.delay, self.crawl_delay),
            t.last_end + p.delay_factor * t.last_response,
            self.backoff_until,
        )

    def set_crawl_delay(self, seconds: float | None) -> None:
        self.crawl_delay = max(seconds or 0.0, 0.0)
        self.rate = self._measured_rate()

    def pages_per_s(self, prior: float) -> float:
        """Expected pages per second, rests included; ``prior`` until the host is measured."""
        return prior if self.rate is None else self.rate

    def _measured_rate(self) -> float | None:
        service = self.timing.service_time()
        if service is None:
            return None
        p = self.politeness
        rate = p.per_host / ((1.0 + p.delay_factor) * service)
        interval = max(p.delay, self.crawl_delay)
        return min(rate, 1.0 / interval) if interval > 0 else rate
