"""Revisit policies: due times after visits, bounds, order, and Nutch's adaptive rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvester.recrawl.policy import (
    NUTCH_INC_RATE,
    POLICIES,
    Bounds,
    Entry,
    HeapPolicy,
    Visit,
    make_policy,
)

WIDE = Bounds(min_interval=1.0, max_interval=1e6)


def watched(name: str, urls: list[str], rate: float = 1.0, bounds: Bounds = WIDE) -> HeapPolicy:
    policy = make_policy(name, rate)
    for url in urls:
        policy.add(Entry(url, bounds, due=0.0))
    return policy


def run(policy: HeapPolicy, changes: dict[str, bool], fetches: int) -> list[str]:
    """Fetch whatever the policy offers, as soon as allowed; ``changes`` says which change
    between every two visits. Returns the order of the fetches."""
    order, now = [], 0.0
    for _ in range(fetches):
        entry = policy.next()
        assert entry is not None
        now = max(now + 1.0, policy.at(entry))  # one fetch a second, the budget
        policy.visited(entry.url, Visit(now, changes[entry.url]))
        order.append(entry.url)
    return order


def test_uniform_is_round_robin() -> None:
    policy = watched("uniform", ["a", "b", "c"])
    assert run(policy, dict.fromkeys("abc", False), 9) == list("abcabcabc")


@pytest.mark.parametrize("name", ["adaptive", "proportional"])
def test_rate_policies_spend_the_budget_on_what_changes(name: str) -> None:
    urls = [f"u{i}" for i in range(10)]
    changes = {url: url == "u0" for url in urls}
    order = run(watched(name, urls), changes, 300)
    late = order[100:]
    assert late.count("u0") > 5 * max(late.count(u) for u in urls[1:])


def test_adaptive_keeps_checking_what_did_not_change() -> None:
    """The prior keeps checking a page seen unchanged, at growing intervals; proportional
    drops it to its maximum interval after two unchanged visits."""
    urls = [f"u{i}" for i in range(5)]
    changes = {url: url == "u0" for url in urls}
    adaptive = run(watched("adaptive", urls), changes, 3000)
    proportional = run(watched("proportional", urls), changes, 3000)
    assert adaptive.count("u4") >= 4
    assert adaptive[50:].count("u4") >= 2
    assert proportional[100:].count("u4") == 0


def test_nutch_interval_rules() -> None:
    policy = make_policy("nutch", rate=1.0)
    policy.add(Entry("a", Bounds(1.0, 1e9), due=0.0))
    first = policy.visited("a", Visit(0.0, True))
    assert first.interval == pytest.approx(60.0)  # uniform interval 1 s, Nutch's minimum 60 s
    unchanged = policy.visited("a", Visit(60.0, False))
    assert unchanged.interval == pytest.approx(60.0 * (1 + NUTCH_INC_RATE))
    # sync_delta: the interval is at least the time since the last change (at 0 s), and the
    # next fetch counts from fetch - 0.3 * delta
    later = policy.visited("a", Visit(1000.0, False))
    assert later.interval == pytest.approx(1000.0)
    assert later.due == pytest.approx(1000.0 - 300.0 + 1000.0)
    changed = policy.visited("a", Visit(1700.0, True, last_modified=1690.0))
    assert changed.interval == pytest.approx(800.0)
    assert changed.due == pytest.approx(1700.0 - 3.0 + 800.0)


def test_a_superseded_due_time_is_skipped() -> None:
    policy = watched("uniform", ["a", "b"])
    policy.visited("a", Visit(5.0, False))
    entry = policy.next()
    assert entry is not None and entry.url == "b"


def test_unknown_policy_is_an_error() -> None:
    with pytest.raises(ValueError, match="revisit policy must be one of"):
        make_policy("lru", 1.0)


@given(
    st.sampled_from(POLICIES),
    st.lists(st.tuples(st.floats(0.0, 1e5), st.booleans()), min_size=1, max_size=30),
    st.floats(1.0, 100.0),
    st.floats(100.0, 1e5),
)
def test_every_interval_keeps_the_bounds(
    name: str, gaps: list[tuple[float, bool]], low: float, high: float
) -> None:
    policy = watched(name, ["a", "b"], bounds=Bounds(low, high))
    now = 0.0
    for gap, changed in gaps:
        now += gap
        entry = policy.visited("a", Visit(now, changed, last_modified=now - gap / 2))
        assert low - 1e-6 <= entry.due - now <= high + 1e-6
        assert policy.allowed(entry) >= now + low - 1e-6
