"""The adaptive revisit policy with the watch's default bounds, against a round-robin loop of
conditional GETs at the same budget, in simulated time on the sites of ``bench
recrawl_live`` (Poisson pages, some changing faster than the loop's cycle): it captures at
least 1.5x the changes, and spends every fetch of the budget (no rounds of waiting)."""

from __future__ import annotations

from bisect import bisect_right

import pytest

from bench.recrawl_live import draw_rates
from harvester.recrawl.policy import Bounds, Entry, Visit, make_policy
from tests.changing_site import site_changes

PAGES, RATE, SECONDS = 200, 5.0, 600.0


def _changed(changes: list[float], last: float | None, now: float) -> tuple[bool, float | None]:
    """Whether a page changed between two visits, and its Last-Modified now."""
    count = bisect_right(changes, now)
    modified = changes[count - 1] if count else 0.0  # the site began at 0
    return last is not None and count > bisect_right(changes, last), modified


def _round_robin(changes: list[list[float]]) -> int:
    captured, last = 0, [None] * len(changes)
    for k in range(int(SECONDS * RATE)):
        now, page = k / RATE, k % len(changes)
        captured += _changed(changes[page], last[page], now)[0]
        last[page] = now
    return captured


def _watch(changes: list[list[float]]) -> tuple[int, int]:
    """(changes captured, fetches made): one fetch of the budget every 1 / RATE s, spent on
    what the policy picks (the watch's loop)."""
    policy = make_policy("adaptive", RATE)
    for page in range(len(changes)):
        policy.add(Entry(str(page), Bounds(), due=0.0))  # the watch's default bounds
    captured = fetches = 0
    last: dict[str, float] = {}
    for k in range(int(SECONDS * RATE)):
        now = k / RATE
        entry = policy.pick(now)
        if entry is None:
            continue  # this fetch of the budget is lost
        changed, modified = _changed(changes[int(entry.url)], last.get(entry.url), now)
        policy.visited(entry.url, Visit(now, changed, modified))
        last[entry.url] = now
        captured += changed
        fetches += 1
    return captured, fetches


@pytest.mark.parametrize("shape", ["minutes", "seconds"])
def test_default_bounds_capture_1_5x_the_round_robin_loop_and_spend_the_budget(
    shape: str,
) -> None:
    changes = site_changes(draw_rates(PAGES, 1, shape), 1)
    captured, fetches = _watch(changes)
    assert fetches >= 0.98 * SECONDS * RATE  # the budget spent
    assert captured >= 1.5 * _round_robin(changes)
