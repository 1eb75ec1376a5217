"""Quality scorers: OPIC cash moves without being created or lost; depth and policy weigh it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.crawl.policies import PolicySet
from harvester.crawl.quality import OPICScorer, Outlink, PageState, Scorer, importance


def page(url: str, cash: float, depth: int = 0, policy: str = "default") -> PageState:
    return PageState(url, depth, policy, depth, {"opic": cash})


def links(*urls: str, policy: str = "default", distance: int = 1) -> list[Outlink]:
    return [Outlink(u, policy, distance) for u in urls]


def test_seeds_start_with_cash_others_with_none() -> None:
    scorer: Scorer = OPICScorer(seed_cash=2.0)
    assert scorer.initial(True, "default") == {"opic": 2.0, "quality": 2.0, "backlinks": 1.0}
    assert scorer.initial(False, "default") == {"opic": 0.0, "quality": 0.0, "backlinks": 0.0}


def test_a_pages_cash_is_split_equally_among_its_distinct_outlinks() -> None:
    scorer = OPICScorer(depth_decay=1.0)
    got = scorer.on_fetched(page("s", 0.9), links("a", "b", "a", "c"))
    assert list(got) == ["a", "b", "c"]  # links are a set: "a" twice gets one share
    assert [c["opic"] for c in got.values()] == pytest.approx([0.3, 0.3, 0.3])
    assert all(c["backlinks"] == 1.0 for c in got.values())


def test_quality_decays_with_depth() -> None:
    scorer = OPICScorer(depth_decay=0.5)
    shallow = scorer.on_fetched(page("s", 1.0, depth=0), links("a"))["a"]
    deep = scorer.on_fetched(page("t", 1.0, depth=2), links("b"))["b"]
    assert shallow["quality"] == pytest.approx(0.5)
    assert deep["quality"] == pytest.approx(0.125)
    assert shallow["opic"] == deep["opic"] == 1.0  # OPIC cash itself ignores depth


def test_policy_multiplier_favours_fading_with_distance_and_distrust() -> None:
    scorer = OPICScorer(depth_decay=1.0, multiplier=PolicySet().multiplier)
    assert scorer.initial(True, "favor")["quality"] == pytest.approx(4.0)
    near = scorer.on_fetched(page("s", 1.0, policy="favor"), links("a", policy="favor"))
    far = scorer.on_fetched(page("t", 1.0, policy="favor"), links("b", policy="favor", distance=3))
    low = scorer.on_fetched(page("u", 1.0, policy="distrust"), links("c", policy="distrust"))
    assert near["a"]["quality"] == pytest.approx(1 + 3 * 0.7)
    assert far["b"]["quality"] == pytest.approx(1 + 3 * 0.7**3)
    assert low["c"]["quality"] == pytest.approx(0.2)


def test_cash_of_a_page_without_outlinks_goes_to_the_virtual_page() -> None:
    scorer = OPICScorer()
    assert scorer.on_fetched(page("leaf", 0.25), []) == {}
    assert scorer.virtual_cash == 0.25


def test_importance_is_history_plus_cash() -> None:
    assert importance(0.5, {"opic": 0.25}) == 0.75


def test_depth_decay_must_be_a_fraction() -> None:
    with pytest.raises(ValueError, match="depth_decay"):
        OPICScorer(depth_decay=0.0)


@settings(max_examples=80, deadline=None)
@given(
    graph=st.dictionaries(
        st.integers(0, 14), st.lists(st.integers(0, 14), max_size=6), min_size=1, max_size=15
    ),
    order=st.lists(st.integers(0, 14), min_size=1, max_size=40),
)
def test_opic_cash_is_conserved(graph: dict[int, list[int]], order: list[int]) -> None:
    """Fetching moves a page's cash to its outlinks (or the virtual page) and into its history:
    the cash in the system stays what the seeds started with, and the history grows by exactly
    the cash the fetched pages held."""
    scorer = OPICScorer()
    seeds = sorted(graph)[:3]
    cash = {p: scorer.initial(p in seeds, "default")["opic"] for p in range(15)}
    history = dict.fromkeys(range(15), 0.0)
    start = sum(cash.values())
    moved = 0.0
    for p in order:
        held = cash[p]
        state = PageState(str(p), 0, "default", 0, {"opic": held})
        shares = scorer.on_fetched(state, links(*(str(t) for t in graph.get(p, []))))
        history[p] += held
        cash[p] = 0.0
        moved += held
        for target, share in shares.items():
            cash[int(target)] += share["opic"]
        assert sum(cash.values()) + scorer.virtual_cash == pytest.approx(start)
        assert sum(history.values()) == pytest.approx(moved)
