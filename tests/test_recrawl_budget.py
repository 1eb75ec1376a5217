"""The adaptive policy spends a small budget (``bench recrawl``'s simulation, small and seeded).

Before the fix, at budgets of 0.1 to 0.5 fetches per page per mean change interval, a few
pages whose rate was over-estimated from two or three visits (and the first pages found,
counted at the uniform rate of a smaller watch) stretched every other interval: the policy
fetched a fraction of its budget and Nutch's schedule captured more versions.
"""

from __future__ import annotations

import argparse

import pytest

from bench.recrawl import draw_rates, simulate


@pytest.mark.parametrize(("distribution", "spent"), [("loguniform", 0.9), ("mostly-static", 0.7)])
def test_adaptive_spends_a_small_budget_and_captures_what_nutch_does(
    distribution: str, spent: float
) -> None:
    """Mostly-static: the never-changing pages' share of the budget, at their maximum interval
    of 30 days, falls due after the 300 simulated hours (it was 0.12 of the budget spent)."""
    rates = draw_rates(distribution, 1000, seed=1)
    args = argparse.Namespace(seed=1, hours=300.0)
    ours = simulate(rates, "adaptive", 0.2, args)
    uniform = simulate(rates, "uniform", 0.2, args)  # spends the budget exactly
    nutch = simulate(rates, "nutch", 0.2, args)
    assert ours.fetches >= spent * uniform.fetches
    assert ours.new >= nutch.new
