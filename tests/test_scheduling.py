"""Crawl scheduling: each policy's order on small scenarios, politeness, backoff and cost."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.crawl.hosts import Fetched
from harvester.crawl.twolevel import (
    HostState,
    Politeness,
    QueuedURL,
    Scheduler,
    make_scheduler,
)

EAGER = Politeness(delay_factor=0.0)  # no rest between requests: order is all that shows
_seq = itertools.count(1)


def url(host: str, path: str, score: float = 0.0) -> QueuedURL:
    return QueuedURL(f"http://{host}/{path}", host, {"quality": score}, 0, "default", next(_seq))


def serve_all(scheduler: Scheduler, now: float = 0.0) -> Iterator[QueuedURL]:
    """Serve URLs one at a time, each finishing at once: the policy's order, unhindered."""
    while (item := scheduler.next(now)) is not None:
        scheduler.done(item.host, Fetched(now=now, latency=0.0, nbytes=0, status=200))
        yield item


def paths(items: Iterator[QueuedURL]) -> list[str]:
    return [item.url.removeprefix("http://") for item in items]


def measure(scheduler: Scheduler, host: str, latency: float, at: float = 0.0) -> float:
    """Fetch one page of ``host`` that takes ``latency`` seconds; returns when it ended."""
    scheduler.add(url(host, f"probe-{next(_seq)}", 1e9))
    item = scheduler.next(at)
    assert item is not None and item.host == host
    scheduler.done(host, Fetched(now=at + latency, latency=latency, nbytes=0, status=200))
    return at + latency


# -- the four policies --


def test_bfs_serves_hosts_in_turn_each_oldest_first() -> None:
    s = make_scheduler("bfs", politeness=EAGER)
    for item in [url("a", "1"), url("a", "2"), url("b", "1"), url("a", "3"), url("c", "1")]:
        s.add(item)
    s.add(url("b", "2", score=100.0))  # bfs never reads scores
    assert paths(serve_all(s)) == ["a/1", "b/1", "c/1", "a/2", "b/2", "a/3"]


def test_bfs_hands_free_slots_to_the_next_host_in_line() -> None:
    s = make_scheduler("bfs", politeness=EAGER)
    for host in "abc":
        s.add(url(host, "1"))
        s.add(url(host, "2"))
    first = [s.next(0.0), s.next(0.0)]
    assert [i.host for i in first if i] == ["a", "b"]
    s.done("a", Fetched(now=1.0, latency=0.1, nbytes=10, status=200))  # a rejoins behind c
    assert [i.host for i in serve_all(s, 1.0)] == ["c", "a", "c"]


def test_performance_serves_the_fastest_host_its_oldest_url_first() -> None:
    s = make_scheduler("performance", politeness=EAGER)
    measure(s, "slow", 1.0)
    measure(s, "fast", 0.05)
    measure(s, "middling", 0.3)
    s.add(url("slow", "1"))
    s.add(url("middling", "1"))
    s.add(url("fast", "old", score=0.0))
    s.add(url("fast", "new", score=9.0))
    assert paths(serve_all(s, 2.0)) == ["fast/old", "fast/new", "middling/1", "slow/1"]


def test_quality_serves_the_best_url_of_any_host() -> None:
    s = make_scheduler("quality", politeness=EAGER)
    for host, path, score in [("a", "1", 0.5), ("a", "2", 3.0), ("b", "1", 2.0), ("c", "1", 9.0)]:
        s.add(url(host, path, score))
    assert paths(serve_all(s)) == ["c/1", "a/2", "b/1", "a/1"]


def test_quality_skips_a_host_that_may_not_be_asked_now() -> None:
    s = make_scheduler("quality", politeness=Politeness(delay=10.0))
    s.add(url("a", "1", 9.0))
    s.add(url("a", "2", 8.0))
    s.add(url("b", "1", 1.0))
    got = [s.next(0.0), s.next(0.0), s.next(0.0)]
    assert [i.url if i else None for i in got] == ["http://a/1", "http://b/1", None]
    assert s.wake_time() is None  # both hosts busy: only a finished fetch can change that
    s.done("a", Fetched(now=1.0, latency=0.5, nbytes=100, status=200))
    assert s.wake_time() == 10.0  # delay 10 s from a's last start
    assert s.next(9.9) is None
    item = s.next(10.0)
    assert item is not None and item.url == "http://a/2"


def test_quality_orders_by_the_configured_score() -> None:
    s = make_scheduler("quality", politeness=EAGER, score="opic")
    s.add(QueuedURL("http://a/1", "a", {"quality": 9.0, "opic": 1.0}, 0, "default", 1))
    s.add(QueuedURL("http://b/1", "b", {"quality": 1.0, "opic": 5.0}, 0, "default", 2))
    assert paths(serve_all(s)) == ["b/1", "a/1"]


@pytest.mark.parametrize(
    ("fast_score", "slow_score", "first"),
    [(1.0, 5.0, "fast"), (1.0, 20.0, "slow"), (1.0, 9.0, "fast"), (1.0, 11.0, "slow")],
)
def test_capability_serves_the_host_with_most_rate_times_quality(
    fast_score: float, slow_score: float, first: str
) -> None:
    """Rates 1 / ((1 + K) * latency): 5 pages/s for ``fast``, 0.5 for ``slow`` (10x)."""
    s = make_scheduler("capability", politeness=Politeness(delay_factor=1.0))
    measure(s, "fast", 0.1)
    measure(s, "slow", 1.0)
    s.add(url("fast", "1", fast_score))
    s.add(url("slow", "1", slow_score))
    item = s.next(10.0)
    assert item is not None and item.host == first


def test_capability_serves_the_chosen_hosts_best_url() -> None:
    s = make_scheduler("capability", politeness=EAGER)
    measure(s, "a", 0.1)
    s.add(url("a", "good", 5.0))
    s.add(url("a", "better", 6.0))
    s.add(url("a", "poor", 1.0))
    assert paths(serve_all(s, 1.0)) == ["a/better", "a/good", "a/poor"]


def test_host_rate_follows_latency_bandwidth_and_rest() -> None:
    host = HostState("h", 0, Politeness(delay_factor=1.0), lambda item: (0.0, item.seq))
    host.start(0.0)
    host.finish(Fetched(1.0, latency=0.2, nbytes=8000, status=200, retry_after=None))
    # 0.2 s latency, 8000 bytes in 0.8 s: 10 kB/s; one page = 1 s, then 1 s of rest
    assert host.timing.bytes_per_s == pytest.approx(10_000)
    assert host.pages_per_s(prior=99.0) == pytest.approx(0.5)
    slowed = HostState("h", 0, Politeness(delay=4.0, delay_factor=1.0), lambda i: (0.0, i.seq))
    slowed.start(0.0)
    slowed.finish(Fetched(1.0, latency=0.2, nbytes=8000, status=200, retry_after=None))
    assert slowed.pages_per_s(prior=99.0) == pytest.approx(0.25)  # the delay binds


def test_capability_gives_new_hosts_the_best_measured_rate() -> None:
    s = make_scheduler("capability", politeness=Politeness(delay_factor=1.0))
    measure(s, "fast", 0.1)  # 5 pages/s
    measure(s, "slow", 1.0)  # 0.5 pages/s
    s.add(url("slow", "1", 3.0))
    s.add(url("new", "1", 2.0))  # unmeasured: assumed 5 pages/s, so 10 against 1.5
    item = s.next(10.0)
    assert item is not None and item.host == "new"


def test_capability_with_a_configured_prior() -> None:
    s = make_scheduler("capability", politeness=Politeness(delay_factor=1.0), prior_pages_per_s=0.1)
    measure(s, "slow", 1.0)  # 0.5 pages/s
    s.add(url("slow", "1", 3.0))
    s.add(url("new", "1", 2.0))  # 0.2 against 1.5
    item = s.next(10.0)
    assert item is not None and item.host == "slow"


@pytest.mark.parametrize("policy", ["bfs", "performance", "quality", "capability"])
def test_a_url_is_queued_from_add_until_handed_out(policy: str) -> None:
    s = make_scheduler(policy, politeness=EAGER)
    first, second = url("a", "1"), url("a", "2")
    s.add(first)
    s.add(second)
    assert s.queued(first.url, "a") and s.queued(second.url, "a")
    assert not s.queued(first.url, "b") and not s.queued("http://a/3", "a")
    handed = s.next(0.0)
    assert handed is not None
    assert not s.queued(handed.url, "a")  # in flight: no longer waiting
    assert s.queued(({first.url, second.url} - {handed.url}).pop(), "a")


def test_unknown_scheduler_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown scheduler 'fifo'.*capability"):
        make_scheduler("fifo", politeness=EAGER)


def test_politeness_values_are_checked() -> None:
    with pytest.raises(ValueError, match="per_host"):
        Politeness(per_host=0)
    with pytest.raises(ValueError, match="delay"):
        Politeness(delay=-1)


# -- politeness --


@pytest.mark.parametrize("per_host", [1, 4])
def test_the_delay_counts_from_when_the_request_left(per_host: int) -> None:
    """A URL handed out at 0 whose request leaves only at 0.3 (the event loop was busy
    archiving another page): the next request of its host may leave at 0.3 + delay, not at
    delay, or the host would see a gap shorter than ``--delay``."""
    for policy in ("bfs", "performance", "quality", "capability"):
        s = make_scheduler(policy, politeness=Politeness(delay=1.0, per_host=per_host))
        s.add(url("h", "a"))
        s.add(url("h", "b"))
        assert s.next(0.0) is not None
        s.sent("h", 0.3)
        s.done("h", Fetched(now=0.35, latency=0.02, nbytes=100, status=200))
        assert s.next(1.1) is None, policy
        assert s.wake_time() == pytest.approx(1.3), policy
        assert s.next(1.3) is not None, policy


@settings(max_examples=60, deadline=None)
@given(
    delay=st.sampled_from([0.0, 0.5, 2.0]),
    factor=st.sampled_from([0.0, 1.0, 3.0]),
    crawl_delay=st.sampled_from([None, 1.0, 5.0]),
    latencies=st.lists(st.floats(0.01, 3.0), min_size=2, max_size=12),
    policy=st.sampled_from(["bfs", "performance", "quality", "capability"]),
)
def test_a_host_is_never_asked_sooner_than_politeness_allows(
    delay: float, factor: float, crawl_delay: float | None, latencies: list[float], policy: str
) -> None:
    s = make_scheduler(policy, politeness=Politeness(delay=delay, delay_factor=factor))
    s.set_crawl_delay("h", crawl_delay)
    for i in range(len(latencies)):
        s.add(url("h", str(i), float(i)))
    now, fetches = 0.0, []
    for took in latencies:
        while s.next(now) is None:
            wake = s.wake_time()
            assert wake is not None and wake > now
            now = wake
        s.done("h", Fetched(now=now + took, latency=took / 2, nbytes=1000, status=200))
        fetches.append((now, now + took))
        now += took
    gap = max(delay, crawl_delay or 0.0)
    for (start, end), (next_start, _) in itertools.pairwise(fetches):
        assert next_start >= start + gap - 1e-9
        assert next_start >= end + factor * (end - start) - 1e-9


def test_per_host_caps_requests_in_flight() -> None:
    s = make_scheduler("bfs", politeness=Politeness(delay_factor=0.0, per_host=2))
    for i in range(4):
        s.add(url("h", str(i)))
    s.add(url("other", "1"))
    got = [s.next(0.0) for _ in range(4)]
    assert [i.host if i else None for i in got] == ["h", "other", "h", None]
    s.done("h", Fetched(now=1.0, latency=0.1, nbytes=10, status=200))
    item = s.next(1.0)
    assert item is not None and item.host == "h"
    assert s.next(1.0) is None


def test_backoff_honours_retry_after_and_resets_on_success() -> None:
    s = make_scheduler("quality", politeness=Politeness(delay_factor=0.0))
    for i in range(4):
        s.add(url("h", str(i), 1.0))
    assert s.next(0.0) is not None
    s.done("h", Fetched(now=1.0, latency=0.5, nbytes=0, status=503, retry_after=30.0))
    assert s.wake_time() == 31.0
    assert s.next(30.9) is None
    assert s.next(31.0) is not None
    s.done("h", Fetched(now=32.0, latency=0.5, nbytes=100, status=200))
    assert s.wake_time() == 32.0  # success: no more backoff
    assert s.next(32.0) is not None


def test_backoff_doubles_without_retry_after_up_to_the_cap() -> None:
    s = make_scheduler("bfs", politeness=Politeness(delay_factor=0.0, max_backoff=5.0))
    for i in range(6):
        s.add(url("h", str(i)))
    now, waits = 0.0, []
    for status in (None, 429, 500, 503, 503):
        assert s.next(now) is not None
        s.done("h", Fetched(now=now, latency=0.0, nbytes=0, status=status))
        wake = s.wake_time()
        assert wake is not None
        waits.append(wake - now)
        now = wake
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_a_client_error_is_not_the_hosts_fault() -> None:
    s = make_scheduler("bfs", politeness=Politeness(delay_factor=0.0))
    s.add(url("h", "1"))
    s.add(url("h", "2"))
    assert s.next(0.0) is not None
    s.done("h", Fetched(now=1.0, latency=0.1, nbytes=10, status=404))
    assert s.next(1.0) is not None


def test_robots_fetch_counts_without_being_handed_out() -> None:
    s = make_scheduler("bfs", politeness=Politeness(delay_factor=2.0))
    s.done("h", Fetched(now=1.0, latency=0.5, nbytes=100, status=200))  # robots.txt, fetched aside
    s.add(url("h", "1"))
    assert s.wake_time() == 2.0  # rests twice the 0.5 s the robots.txt fetch took
    assert s.next(1.9) is None
    assert s.next(2.0) is not None


# -- the queue --


def test_bump_reorders_within_a_host_and_across_hosts() -> None:
    s = make_scheduler("quality", politeness=EAGER)
    s.add(url("a", "1", 1.0))
    s.add(url("a", "2", 2.0))
    s.add(url("b", "1", 2.5))
    s.bump("http://a/1", "a", {"quality": 5.0})
    s.bump("http://gone/1", "gone", {"quality": 5.0})  # not queued: ignored
    served = list(serve_all(s))
    assert paths(iter(served)) == ["a/1", "b/1", "a/2"]
    assert served[0].scores["quality"] == 6.0


def test_bump_adds_scores_but_keeps_fifo_order() -> None:
    s = make_scheduler("bfs", politeness=EAGER)
    s.add(url("a", "1", 1.0))
    s.add(url("a", "2", 1.0))
    s.bump("http://a/2", "a", {"quality": 10.0, "opic": 0.5})
    served = list(serve_all(s))
    assert paths(iter(served)) == ["a/1", "a/2"]
    assert served[1].scores == {"quality": 11.0, "opic": 0.5}


def test_counts_and_an_empty_scheduler() -> None:
    s = make_scheduler("capability", politeness=EAGER)
    assert (len(s), s.hosts(), s.wake_time(), s.next(0.0)) == (0, 0, None, None)
    for host, path in [("a", "1"), ("a", "2"), ("b", "1")]:
        s.add(url(host, path))
    s.add(url("a", "1"))  # queued already: replaced, not doubled
    assert (len(s), s.hosts()) == (3, 2)
    list(serve_all(s))
    assert (len(s), s.hosts(), s.wake_time()) == (0, 0, None)


def _drain_time(policy: str, hosts: int, per_host: int) -> tuple[int, float]:
    s = make_scheduler(policy, politeness=EAGER)
    for i in range(per_host):
        for h in range(hosts):
            s.add(url(f"h{h}", str(i), float((h * 7919 + i) % 1000)))
    started = time.perf_counter()
    served = sum(1 for _ in serve_all(s))
    return served, time.perf_counter() - started


@pytest.mark.parametrize("policy", ["bfs", "performance", "quality", "capability"])
def test_selection_cost_does_not_grow_with_the_number_of_hosts(policy: str) -> None:
    """10,000 hosts x 10 URLs drain; a fetch costs about as much as with 100 hosts.

    A scan of every host per selection would make the large case ~100x dearer per fetch."""
    small, small_s = _drain_time(policy, 100, 20)
    large, large_s = _drain_time(policy, 10_000, 10)
    assert (small, large) == (2_000, 100_000)
    assert large_s / large < 8 * small_s / small
    assert large_s < 30.0  # generous: about 2 s on an idle core


def test_an_unmeasured_host_gets_the_best_measured_rate_as_its_prior() -> None:
    """Measuring other hosts raises the prior: an unmeasured host is not left behind a host
    that was measured slower than the best (the prior is applied when choosing, not when the
    host became ready)."""
    from harvester.crawl.twolevel import Politeness, QueuedURL, make_scheduler

    sched = make_scheduler("performance", politeness=Politeness(delay_factor=0.0))
    for seq, host in enumerate(("a", "c", "b")):
        for n in range(2):
            sched.add(QueuedURL(f"http://{host}/{n}", host, {}, seq=seq * 2 + n))
    first, second = sched.next(0.0), sched.next(0.0)
    assert (first.host, second.host) == ("a", "c")
    sched.done("a", Fetched(now=0.1, latency=0.1, nbytes=0, status=200))  # 10 pages/s
    sched.done("c", Fetched(now=0.5, latency=0.5, nbytes=0, status=200))  # 2 pages/s
    picks = [sched.next(1.0).host for _ in range(3)]
    assert picks == ["b", "a", "c"], "b, unmeasured, is assumed as fast as the best (a)"
