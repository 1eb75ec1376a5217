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

Both are unbiased only in the limit: after two or three visits that each found a change just
after it happened, the ``Last-Modified`` estimate is many times the true rate. :func:`shrunk`
pulls such a small-sample estimate toward the population's (empirical Bayes): with a gamma
prior of shape ``alpha`` and mean ``m`` on the rates, a page that showed ``X`` changes over
``T`` seconds of exposure has the posterior mean rate ``(alpha + X) / (alpha / m + T)``, which
is the prior mean before any visit and the page's own estimate once ``T`` is long.
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


@dataclass(frozen=True)
class Prior:
    """A gamma prior on the change rates: shape ``alpha`` (worth ``alpha`` changes seen) and
    ``mean`` per second, the population's mean rate (:class:`Pool`)."""

    alpha: float
    mean: float


def evidence(history: History) -> tuple[float, float]:
    """The changes ``X`` and exposure ``T`` (seconds) a history amounts to.

    With ``Last-Modified`` (as :func:`estimate` chooses) ``X`` is the changes seen and ``T``
    the censored exposure, the gamma posterior's exact counts for that model; from
    changed/unchanged visits a visit hides how many changes it covered, so ``X`` is the
    estimate times the time observed.
    """
    h = history
    if h.lm_visits >= 2 and 2 * h.lm_visits >= h.visits:
        return float(h.lm_changes), h.lm_exposure
    return estimate(h) * h.observed, h.observed


def shrunk(history: History, prior: Prior) -> float:
    """The posterior mean rate of ``history`` under ``prior``: ``(alpha + X) / (alpha / m + T)``.

    >>> shrunk(History(), Prior(alpha=1.0, mean=0.01))  # no visit yet: the prior mean
    0.01
    >>> h = History(visits=2, changes=2, observed=200.0, lm_visits=2, lm_changes=2, lm_exposure=4.0)
    >>> round(estimate(h), 3), round(shrunk(h, Prior(alpha=1.0, mean=0.01)), 4)
    (0.25, 0.0288)
    """
    if prior.mean <= 0:
        return estimate(history)
    changes, exposure = evidence(history)
    return (prior.alpha + changes) / (prior.alpha / prior.mean + exposure)


@dataclass
class Pool:
    """The mean of the per-page estimates (:func:`estimate`) over every page revisited at
    least once: the gamma prior's mean. Each of those estimates is bias-reduced on its own,
    so their mean is the population's mean rate (a pooled ``sum X / sum T`` is not: a visit
    sees at most one change, so it undercounts the pages that change fastest)."""

    total: float = 0.0
    pages: int = 0

    def replace(self, old: History, new: History) -> None:
        """Count ``new`` in place of ``old`` (one page's history before and after a visit)."""
        for sign, history in ((-1, old), (1, new)):
            if history.visits:
                self.total += sign * estimate(history)
                self.pages += sign

    def prior(self, alpha: float) -> Prior:
        return Prior(alpha, max(self.total / self.pages, 0.0) if self.pages else 0.0)


def naive_rate(history: History) -> float:
    """Changes seen per second observed, ``X / T``: biased low when a visit can hide several
    changes (Cho & Garcia-Molina's "naive estimator").

    >>> naive_rate(History(visits=4, changes=2, observed=100.0))
    0.02
    """
    return history.changes / history.observed if history.observed > 0 else 0.0
