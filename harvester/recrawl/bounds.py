"""A URL's revisit interval bounds, and the threshold that spends a budget within them.

The bounds' default floor follows from the budget and the watch (:meth:`Bounds.resolved`): a
second at most, and never more than the round-robin cycle (URLs / rate), so no URL is ever
kept from being revisited as often as a round-robin loop at the same budget would.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, field

AUTO = 0.0  # a minimum interval of AUTO: the default floor (Bounds.resolved)
AUTO_FLOOR = 1.0  # seconds: the default floor, at most


@dataclass(frozen=True)
class Bounds:
    """A URL's interval bounds, in seconds; a ``min_interval`` of :data:`AUTO` (the default)
    is resolved by the policy from its budget and its URLs (:meth:`resolved`)."""

    min_interval: float = AUTO
    max_interval: float = 7 * 86400.0

    def clamp(self, interval: float) -> float:
        return min(max(interval, self.min_interval), self.max_interval)

    def resolved(self, cycle: float) -> Bounds:
        """These bounds for a watch whose round-robin cycle (URLs / rate) is ``cycle``: the
        default floor is :data:`AUTO_FLOOR`, or the cycle when it is shorter.

        >>> Bounds().resolved(40.0), Bounds().resolved(0.5), Bounds(60.0, 90.0).resolved(40.0)
        (Bounds(min_interval=1.0, max_interval=604800.0), \
Bounds(min_interval=0.5, max_interval=604800.0), Bounds(min_interval=60.0, max_interval=90.0))
        """
        if self.min_interval != AUTO:
            return self
        floor = min(AUTO_FLOOR, cycle)
        return Bounds(floor, max(self.max_interval, floor))


def threshold(rates: dict[str, float], bounds: dict[str, Bounds], budget: float) -> float:
    """The ``theta`` at which the intervals ``clamp(theta / rate)`` add up to ``budget``
    fetches a second, ``sum(1 / interval) = budget`` (water-filling: the URLs clamped to a
    bound give up or take their share of it, and the others share the rest).

    Without the bounds it is ``sum(rates) / budget``; when even the maximum intervals spend
    more than the budget (or the minimum ones less) it is that extreme.
    """
    groups: dict[Bounds, list[float]] = {}
    for url, rate in rates.items():
        groups.setdefault(bounds[url], []).append(rate)
    spend = [_Spend(b, sorted(r)) for b, r in groups.items()]
    low, high = 1e-12, 1e12
    for _ in range(100):
        mid = math.sqrt(low * high)
        if sum(s.at(mid) for s in spend) > budget:
            low = mid
        else:
            high = mid
        if high / low < 1 + 1e-9:
            break
    return high


@dataclass
class _Spend:
    """Fetches a second of one bounds' URLs (rates sorted) as a function of ``theta``."""

    bounds: Bounds
    rates: list[float]
    sums: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.sums = [0.0, *itertools.accumulate(self.rates)]

    def at(self, theta: float) -> float:
        low, high = self.bounds.min_interval, self.bounds.max_interval
        slow = bisect.bisect_right(self.rates, theta / high)  # clamped to the maximum
        fast = bisect.bisect_left(self.rates, theta / low)  # from here clamped to the minimum
        fast = max(fast, slow)
        middle = (self.sums[fast] - self.sums[slow]) / theta
        return slow / high + (len(self.rates) - fast) / low + middle
