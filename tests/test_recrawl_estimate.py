"""Change-rate estimators (Cho & Garcia-Molina): table tests and properties on Poisson draws."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvester.recrawl.estimate import (
    History,
    estimate,
    naive_rate,
    rate_changed,
    rate_last_modified,
)


@pytest.mark.parametrize(
    ("n", "x", "interval", "expected"),
    [
        (10, 0, 60.0, 0.0),
        (1, 1, 1.0, math.log(3)),  # -ln(0.5 / 1.5)
        (4, 2, 2.0, -math.log(2.5 / 4.5) / 2),
        (100, 100, 10.0, math.log(201) / 10),
        (0, 0, 10.0, 0.0),
    ],
)
def test_rate_changed_table(n: int, x: int, interval: float, expected: float) -> None:
    assert rate_changed(n, x, interval) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "x", "exposure", "expected"),
    [
        (5, 0, 100.0, 0.0),
        (5, 5, 20.0, 4 / 20),
        (4, 2, 10.0, (1 + 2 / (4 * math.log(2))) / 10),
        (3, 1, 10.0, (0 - 1 / (3 * math.log(2 / 3))) / 10),
    ],
)
def test_rate_last_modified_table(n: int, x: int, exposure: float, expected: float) -> None:
    assert rate_last_modified(n, x, exposure) == pytest.approx(expected)


@given(st.integers(1, 200), st.floats(0.1, 1e6))
def test_rate_changed_grows_with_changes_seen(n: int, interval: float) -> None:
    rates = [rate_changed(n, x, interval) for x in range(n + 1)]
    assert rates[0] == 0.0
    assert all(a < b for a, b in itertools.pairwise(rates))
    assert math.isfinite(rates[-1])


@given(st.integers(2, 200), st.floats(1.0, 1e6))
def test_rate_last_modified_is_finite_and_monotone(n: int, exposure: float) -> None:
    rates = [rate_last_modified(n, x, exposure) for x in range(n + 1)]
    assert all(r >= 0 and math.isfinite(r) for r in rates)
    assert all(a <= b for a, b in itertools.pairwise(rates))


def observe(rate: float, interval: float, visits: int, seed: int) -> History:
    """Visit a simulated Poisson page every ``interval`` s; Last-Modified is its last change."""
    rng = random.Random(seed)
    history, now, change = History(), 0.0, rng.expovariate(rate)
    last_change = -1.0
    for _ in range(visits):
        now += interval
        changed = change <= now
        while change <= now:
            last_change, change = change, change + rng.expovariate(rate)
        since = now - last_change if changed else now - max(last_change, 0.0)
        history = history.seen(interval, changed, since)
    return history


@pytest.mark.parametrize("ratio", [0.2, 1.0, 3.0])
def test_estimators_recover_the_true_rate(ratio: float) -> None:
    """At r * I = 0.2, 1 and 3 over 400 visits: Last-Modified within 15 %, changed/unchanged
    within 15 % until visits mostly see changes (r I = 3, where it saturates), and the
    naive X / T below both once a visit can hide several changes."""
    rate, interval = 1.0, ratio
    histories = [observe(rate, interval, 400, seed) for seed in range(5)]
    lm = sum(rate_last_modified(h.lm_visits, h.lm_changes, h.lm_exposure) for h in histories) / 5
    assert lm == pytest.approx(rate, rel=0.15)
    cu = sum(rate_changed(h.visits, h.changes, interval) for h in histories) / 5
    naive = sum(naive_rate(h) for h in histories) / 5
    if ratio <= 1.0:
        assert cu == pytest.approx(rate, rel=0.15)
    assert naive < cu
    assert estimate(histories[0]) == rate_last_modified(
        histories[0].lm_visits, histories[0].lm_changes, histories[0].lm_exposure
    )


def test_estimate_falls_back_without_last_modified() -> None:
    history = History().seen(10.0, True).seen(10.0, False).seen(10.0, True)
    assert history.lm_visits == 0
    assert estimate(history) == pytest.approx(rate_changed(3, 2, 10.0))


def test_a_change_counts_back_to_last_modified_only() -> None:
    history = History().seen(100.0, True, since_modified=30.0).seen(100.0, False, 130.0)
    assert (history.lm_visits, history.lm_changes, history.lm_exposure) == (2, 1, 130.0)
