"""``bench recrawl``: the four revisit policies on one simulated site, at budgets 0.1 to 2.

The model (deterministic for a given ``--seed``; no sockets, a simulated clock in seconds):

- ``--pages`` pages (10,000), each changing as a Poisson process of its own rate (Cho &
  Garcia-Molina's model). Two distributions of the rates: ``loguniform``, mean times between
  changes log-uniform over 1 h .. 1,000 h (1,000x); and ``mostly-static``, 80 % of the pages
  never changing and the rest log-uniform as before.
- The budget ``b`` is in fetches per page per mean change interval, the mean change interval
  being ``pages / sum(rates)``: the watch may fetch ``b * sum(rates)`` pages a second, so at
  ``b = 1`` it fetches once for every change the site makes. Budgets 0.1, 0.25, 0.5, 1, 2.
- Every policy fetches through the real :mod:`harvester.recrawl.policy`, as the watch does:
  the URL due first, as soon as the budget and its bounds allow (60 s .. 30 days for all).
  Every fetch is a conditional GET whose answer says whether the page changed since the
  last fetch, and carries the page's true ``Last-Modified`` (its last change).
- At time 0 the collection holds one capture of every page, taken at times spread evenly
  over the uniform interval before (as one uniform round would leave it); the site runs
  ``--hours`` (300) from there, and the figures count the last two thirds only.

Figures: **versions** archived (fetches that found a new version, the first capture of a
page included) as a share of the versions the pages went through (expected count, ``rate *
time`` summed); time-averaged **freshness** (the share of pages whose archived copy is the
live one); **empty** fetches, the share of fetches that found nothing new.
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass
from pathlib import Path

from bench.harness import Report
from harvester.recrawl.policy import POLICIES, Bounds, Entry, Visit, make_policy

HOUR = 3600.0
BUDGETS = (0.1, 0.25, 0.5, 1.0, 2.0)
DISTRIBUTIONS = ("loguniform", "mostly-static")
BOUNDS = Bounds(min_interval=60.0, max_interval=30 * 86400.0)
PNG = Path(__file__).parent / "recrawl.png"
ORDER = ("adaptive", "uniform", "proportional", "nutch")
assert set(ORDER) == set(POLICIES)


def draw_rates(distribution: str, pages: int, seed: int) -> list[float]:
    """Change rates per second: 1/mean interval, log-uniform over 1 h .. 1000 h."""
    rng = random.Random(seed)
    low, high = math.log(HOUR), math.log(1000 * HOUR)
    rates = [1 / math.exp(rng.uniform(low, high)) for _ in range(pages)]
    if distribution == "mostly-static":
        rates = [0.0 if rng.random() < 0.8 else rate for rate in rates]
    return rates


@dataclass
class Outcome:
    """One policy at one budget: the figures over the measured window."""

    fetches: int = 0
    new: int = 0  # fetches that archived a new version
    fresh: float = 0.0  # page-seconds fresh
    versions: float = 0.0  # versions the pages went through (expected)
    page_seconds: float = 0.0

    @property
    def captured(self) -> float:
        return self.new / self.versions if self.versions else 0.0

    @property
    def freshness(self) -> float:
        return self.fresh / self.page_seconds

    @property
    def empty(self) -> float:
        return 1 - self.new / self.fetches if self.fetches else 0.0


class Site:
    """The simulated pages: each fetch learns whether the page changed since the last one."""

    def __init__(self, rates: list[float], seed: int, window: tuple[float, float]) -> None:
        self.rates = rates
        self.rng = random.Random(seed)
        self.window = window
        self.last = [-math.inf] * len(rates)  # last fetch (-inf: never)
        self.next_change = [math.inf] * len(rates)  # the first change after the last fetch
        self.modified = [0.0] * len(rates)  # the Last-Modified the last fetch saw
        self.outcome = Outcome()

    def fetch(self, page: int, now: float) -> Visit:
        rate, last = self.rates[page], self.last[page]
        changed = last == -math.inf or self.next_change[page] <= now
        if last > -math.inf:
            self._fresh(last, min(self.next_change[page], now))
        if changed:
            self.modified[page] = self._last_change(page, now)
        self.last[page] = now
        self.next_change[page] = now + self.rng.expovariate(rate) if rate > 0 else math.inf
        if self.window[0] <= now <= self.window[1]:
            self.outcome.fetches += 1
            self.outcome.new += changed
        return Visit(now, changed, self.modified[page])

    def _last_change(self, page: int, now: float) -> float:
        """The time of the last change before ``now``, given one after the last fetch: the
        Poisson process seen backwards from ``now``, stopped at the first change."""
        rate, first = self.rates[page], self.next_change[page]
        if rate <= 0 or first > now:
            return 0.0
        back = self.rng.expovariate(rate)
        return now - back if back < now - first else first

    def _fresh(self, start: float, end: float) -> None:
        low, high = self.window
        self.outcome.fresh += max(0.0, min(end, high) - max(start, low))

    def close(self) -> Outcome:
        low, high = self.window
        for page, last in enumerate(self.last):
            if last > -math.inf:
                self._fresh(last, min(self.next_change[page], high))
        self.outcome.page_seconds = len(self.rates) * (high - low)
        self.outcome.versions = sum(self.rates) * (high - low)
        return self.outcome


def simulate(
    rates: list[float], policy_name: str, budget: float, args: argparse.Namespace
) -> Outcome:
    rate = budget * sum(rates)
    end = args.hours * HOUR
    site = Site(rates, args.seed + 1, (end / 3, end))
    policy = make_policy(policy_name, rate)
    uniform = len(rates) / rate
    starts = random.Random(args.seed + 2)
    for page, start in sorted(enumerate(-uniform * starts.random() for _ in rates), key=_second):
        policy.add(Entry(str(page), BOUNDS, due=start))
        policy.visited(str(page), site.fetch(page, start))
    now, step = 0.0, 1 / rate
    while (entry := policy.next()) is not None:
        now = max(now + step, policy.at(entry))
        if now > end:
            break
        policy.visited(entry.url, site.fetch(int(entry.url), now))
    return site.close()


def _second(pair: tuple[int, float]) -> float:
    return pair[1]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench recrawl", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=300.0, help="simulated hours")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--png", type=Path, default=PNG)
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    report = Report("recrawl", ["rates", "budget", "figure", *ORDER, "adaptive / best peer"])
    results: dict[str, dict[float, dict[str, Outcome]]] = {}
    for distribution in DISTRIBUTIONS:
        rates = draw_rates(distribution, args.pages, args.seed)
        results[distribution] = {
            b: {p: simulate(rates, p, b, args) for p in ORDER} for b in budgets
        }
        report.rows += _rows(distribution, results[distribution], report.figures)
    report.notes.append(
        f"{args.pages:,} pages, {args.hours:g} simulated hours (the last two thirds counted), "
        f"seed {args.seed}. versions: new versions archived / versions the pages went "
        "through; freshness: time-averaged share of pages whose copy is current; empty: "
        "share of fetches that found nothing new; fetches: in the window (the ratio to "
        "uniform's, which spends the budget exactly). Best peer: the best of the other three."
    )
    if _plot(results, budgets, args.png):
        report.notes.append(f"Plot: {args.png}")
    return report


FIGURES = {"versions": "captured", "freshness": "freshness", "empty": "empty"}


def _rows(
    distribution: str, by_budget: dict[float, dict[str, Outcome]], figures: dict[str, object]
) -> list[list[object]]:
    rows: list[list[object]] = []
    for budget, outcomes in by_budget.items():
        for figure, attribute in FIGURES.items():
            values = {p: getattr(outcomes[p], attribute) for p in ORDER}
            peers = [values[p] for p in ORDER if p != "adaptive"]
            best = min(peers) if figure == "empty" else max(peers)
            ratio = values["adaptive"] / best if best else math.inf
            rows.append([distribution, budget, figure, *values.values(), ratio])
            for policy, value in values.items():
                figures[f"{distribution}_{budget:g}_{figure}_{policy}"] = round(value, 4)
        spent = [outcomes[p].fetches for p in ORDER]
        rows.append([distribution, budget, "fetches", *spent, spent[0] / max(spent[1], 1)])
    return rows


def _plot(
    results: dict[str, dict[float, dict[str, Outcome]]], budgets: list[float], png: Path
) -> bool:
    """One panel per distribution and figure, budget on the x axis; whether it was drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return False
    figure, panels = pyplot.subplots(
        len(results), len(FIGURES), figsize=(13, 7), squeeze=False, sharex=True
    )
    for row, (distribution, by_budget) in zip(panels, results.items(), strict=True):
        for axes, (name, attribute) in zip(row, FIGURES.items(), strict=True):
            for policy in ORDER:
                values = [getattr(by_budget[b][policy], attribute) for b in budgets]
                axes.plot(budgets, values, marker="o", label=policy)
            axes.set(title=f"{distribution}: {name}", xscale="log", ylim=(0, 1.02))
    for axes in panels[-1]:
        axes.set_xlabel("budget (fetches per page per mean change interval)")
    panels[0][0].legend()
    figure.savefig(png, dpi=110, bbox_inches="tight")
    pyplot.close(figure)
    return True
