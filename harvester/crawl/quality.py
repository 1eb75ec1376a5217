"""Quality scorers: how much a URL is worth fetching, estimated before it is fetched.

A scorer gives a URL its first scores when it is queued and, when a page is fetched, the score
contributions its outlinks receive. A URL is scored and queued once; the contributions of links
found later are *added* to its scores (:meth:`Scheduler.bump`), so every score a scorer names
must be additive.

The default, :class:`OPICScorer`, is OPIC (Abiteboul, Preda & Cobena, "Adaptive On-Line Page
Importance Computation", WWW 2003) as a crawler can run it without refetching: seeds start with
cash; a fetched page's cash is split equally among its distinct outlinks, added to theirs, and
moved to the page's *history*; a page's importance is its history plus its cash (for a page not
yet fetched, its cash). Cash is never created or lost: the cash of a page with no outlinks goes
to OPIC's virtual page (:attr:`OPICScorer.virtual_cash`). Its named scores:

- ``opic``: the OPIC cash.
- ``quality``: each cash share weighted by ``depth_decay ** depth`` of the URL and by its crawl
  policy's multiplier (:meth:`PolicySet.multiplier`).
- ``backlinks``: the links found to the URL (one per linking page), each weighted like a
  ``quality`` share but not divided by the linking page's cash: a backlink count (Cho,
  Garcia-Molina & Page, "Efficient Crawling Through URL Ordering"); what the frontier orders
  by by default (``--score``).

OPIC cash in a crawl that fetches each page once is a priority, not a calibrated estimate: a
page ``d`` links from the seeds holds about ``fanout ** -d`` of a seed's cash, so cash compares
URLs well at one depth and badly across depths. Quality-first ordering barely minds; capability
scheduling, which multiplies a score by a host's speed, does (see ``bench/README.md``), and does
better ordered by ``backlinks``, hence that default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

Multiplier = Callable[[str, int], float]  # (policy, distance) -> factor


@dataclass(frozen=True)
class PageState:
    """What the engine knows of a page it has just fetched."""

    url: str
    depth: int  # link hops from a seed
    policy: str
    distance: int  # link hops from where its policy began (its seed, or a switch rule)
    scores: Mapping[str, float]


@dataclass(frozen=True)
class Outlink:
    """A link to follow, with the policy the target inherits (:meth:`PolicySet.inherit`)."""

    url: str
    policy: str
    distance: int


class Scorer(Protocol):
    """Scores URLs from the link structure seen so far."""

    def initial(self, seed: bool, policy: str) -> dict[str, float]:
        """The scores of a URL as it is first queued, before any link contribution."""

    def on_fetched(
        self, page: PageState, outlinks: Sequence[Outlink]
    ) -> dict[str, dict[str, float]]:
        """The contributions, by outlink URL, to add to the outlinks' scores."""


def no_multiplier(policy: str, distance: int) -> float:
    return 1.0


class OPICScorer:
    """OPIC cash, weighted by depth and crawl policy (see the module docstring)."""

    def __init__(
        self,
        *,
        depth_decay: float = 0.9,
        multiplier: Multiplier = no_multiplier,
        seed_cash: float = 1.0,
    ) -> None:
        if not 0 < depth_decay <= 1:
            raise ValueError(f"depth_decay must be in (0, 1], not {depth_decay}")
        self.depth_decay = depth_decay
        self.multiplier = multiplier
        self.seed_cash = seed_cash
        self.virtual_cash = 0.0  # cash of fetched pages that had no outlinks to pass it to

    def initial(self, seed: bool, policy: str) -> dict[str, float]:
        cash = self.seed_cash if seed else 0.0
        factor = self.multiplier(policy, 0)
        return {"opic": cash, "quality": cash * factor, "backlinks": factor if seed else 0.0}

    def on_fetched(
        self, page: PageState, outlinks: Sequence[Outlink]
    ) -> dict[str, dict[str, float]]:
        cash = float(page.scores.get("opic", 0.0))
        targets = distinct(outlinks)
        if not targets:
            self.virtual_cash += cash
            return {}
        share = cash / len(targets)
        decay = self.depth_decay ** (page.depth + 1)
        contributions = {}
        for link in targets:
            weight = decay * self.multiplier(link.policy, link.distance)
            contributions[link.url] = {
                "opic": share,
                "quality": share * weight,
                "backlinks": weight,
            }
        return contributions


def importance(history: float, scores: Mapping[str, float]) -> float:
    """OPIC's estimate of a page's importance: the cash it has passed on plus the cash it holds."""
    return history + float(scores.get("opic", 0.0))


def distinct(outlinks: Sequence[Outlink]) -> list[Outlink]:
    """The outlinks with repeated URLs dropped, the first of each kept: links are a set."""
    seen: dict[str, Outlink] = {}
    for link in outlinks:
        seen.setdefault(link.url, link)
    return list(seen.values())
