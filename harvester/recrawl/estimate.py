"""A page's change rate, estimated from what its revisits saw (a Poisson model of change).

Cho & Garcia-Molina, "Estimating frequency of change" (ACM TOIT 3(3), 2003) model a page's
changes as a Poisson process of rate ``r`` and give estimators for a crawler that sees only
part of it:

- **Changed or not** (their section 4): after ``n`` visits ``I`` apart in which ``X`` found a
  change, the maximum-likelihood estimate ``-ln((n - X)/n)/I`` is infinite once every visit
  saw a change; their bias-reduced estimator adds one half to both counts::

      r = -ln((n - X + 0.5) / (n + 0.5)) / I

  Our visits are not evenly spaced, so ``I`` is the mean interval ``T / n`` (their estimator
  for irregular accesses is a numerical MLE; the mean keeps the history to three numbers).
- **With the last date of change** (their section 6, ``Last-Modified``): the time back from a
  visit to the last change is exponential with rate ``r``, censored at the interval since the
  previous visit. Summing ``T_i`` (back to ``Last-Modified`` when the visit found a change,
  else the whole interval) over the visits, the bias-reduced estimator is::

      r = ((X - 1) - X / (n ln(1 - X / n))) / sum(T_i)

  whose ``X / (n ln(1 - X/n))`` term is -1 at ``X = 0`` (so ``r = 0``) and 0 at ``X = n``.

A :class:`History` holds the sums both need; it is what the watch keeps per URL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class History:
    """What the revisits of one URL saw: ``visits`` intervals (the first fetch is not one)
    summing to ``observed`` seconds, ``changes`` of them with a change; ``lm_visits`` of the
    visits came with a usable ``Last-Modified``, and ``lm_exposure`` sums their ``T_i``."""

    visits: int = 0
    changes: int = 0
    observed: float = 0.0
    lm_visits: int = 0
    lm_changes: int = 0
    lm_exposure: float = 0.0

    def seen(self, interval: float, changed: bool, since_modified: float | None = None) -> History:
        """This history after one more revisit ``interval`` seconds after the last one.

        ``since_modified`` is the visit's time minus its ``Last-Modified``, when the server
        sent one that is neither in the future nor (for a change) before the last visit.
        """
        interval = max(interval, 0.0)
        after = replace(
            self,
            visits=self.visits + 1,
            changes=self.changes + changed,
            observed=self.observed + interval,
        )
        if since_modified is None or since_modified < 0:
            return after
        exposure = min(since_modified, interval) if changed else interval
        return replace(
            after,
            lm_visits=self.lm_visits + 1,
            lm_changes=self.lm_changes + changed,
            lm_exposure=self.lm_exposure + exposure,
        )


def rate_changed(visits: int, changes: int, interval: float) -> float:
    """Cho & Garcia-Molina's bias-reduced estimate from changed/unchanged visits (per second).

    >>> rate_changed(10, 0, 60.0)
    0.0
    >>> round(rate_changed(10, 5, 60.0) * 60, 4)  # -ln(5.5 / 10.5)
    0.6466
    >>> round(rate_changed(10, 10, 60.0) * 60, 4)  # finite even when every visit changed
    3.0445
    """
    if visits <= 0 or interval <= 0 or changes <= 0:
        return 0.0
    return -math.log((visits - changes + 0.5) / (visits + 0.5)) / interval


def rate_last_modified(visits: int, changes: int, exposure: float) -> float:
    """Cho & Garcia-Molina's bias-reduced estimate from ``Last-Modified`` (per second).

    >>> rate_last_modified(10, 0, 600.0)
    0.0
    >>> rate_last_modified(10, 10, 50.0)  # (X - 1) / T when every visit saw a change
    0.18
    >>> round(rate_last_modified(10, 5, 400.0), 5)  # (4 + 5 / (10 ln 2)) / 400
    0.0118
    """
    if visits <= 0 or exposure <= 0 or changes <= 0:
        return 0.0
    if changes >= visits:
        return (changes - 1) / exposure
    ratio = changes / visits
    return max((changes - 1) - changes / (visits * math.log(1 - ratio)), 0.0) / exposure


def estimate(history: History) -> float:
    """The best estimate ``history`` allows: from ``Last-Modified`` when most of the visits
    had one (it sees how long a page stayed unchanged, not only whether it changed), else
    from changed/unchanged."""
    h = history
    if h.lm_visits >= 2 and 2 * h.lm_visits >= h.visits:
        return rate_last_modified(h.lm_visits, h.lm_changes, h.lm_exposure)
    return rate_changed(h.visits, h.changes, h.observed / h.visits if h.visits else 0.0)


def naive_rate(history: History) -> float:
    """Changes seen per second observed, ``X / T``: biased low when a visit can hide several
    changes (Cho & Garcia-Molina's "naive estimator").

    >>> naive_rate(History(visits=4, changes=2, observed=100.0))
    0.02
    """
    return history.changes / history.observed if history.observed > 0 else 0.0
