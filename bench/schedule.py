"""``bench schedule``: the four crawl schedules on one simulated web, by true quality collected.

Reproduces the comparison of Cao, Jiang & Singh ("Scheduling Web Crawl for Better Performance
and Quality"): breadth-first, performance-first, quality-first and capability scheduling crawl
the same synthetic web for the same simulated time, through the real
:mod:`harvester.crawl.twolevel` and :mod:`harvester.crawl.quality`, and we count the true
quality of the pages each has fetched at checkpoints of the time budget.

The model (deterministic for a given ``--seed``; no sockets, a simulated clock):

- Hosts: ``--hosts`` of them. Host ``h`` serves one request in ``t_h`` seconds, ``1 / t_h``
  log-uniform over 0.5..50 pages/s (100x), each fetch jittered by a log-normal factor
  (sigma 0.3); 40% of a fetch is latency, the rest the body transfer of a 5-60 kB page.
- Pages: log-uniform 20..250 per host. A page's true quality is its host's scale times a
  Pareto(1.5) draw (heavy tail). Host scales are log-normal (sigma 0.5), except the 5% slowest
  hosts, whose scale is 10: a few very slow hosts hold the best pages.
- Links: every page but a host's root is linked from an earlier page of its host (so a host is
  reachable from its root), plus 1-6 more links per page: 90% within the host to a page drawn
  in proportion to its quality (good pages attract links), 10% to another host (its root half
  the time, else a page drawn by quality). Seeds: the roots of a random quarter of the hosts.
- What the scheduler sees: a score of the real :class:`OPICScorer`, times a noisy signal of the
  target's true quality, ``q * lognormal(0, --noise)``, standing in for the evidence (anchor
  text, URL, site reputation) a real crawler has before a fetch. Two scores, so two runs: the
  ``opic`` model orders by ``quality`` (OPIC cash shares weighted by depth), the
  ``backlinks`` model by ``backlinks`` (links found, weighted by depth). With ``--noise`` large
  the signal is worthless and only the link structure is left.
- The engine: ``--slots`` concurrent fetches; politeness delay 0, delay factor 1, one request
  per host at a time; every fetch succeeds; unmeasured hosts get the scheduler's default prior
  (the best rate measured so far). Quality counts when a fetch completes. The default budget,
  300 s, leaves every policy short of the whole web (at exhaustion all policies tie).
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from bench.harness import Report
from harvester.crawl.hosts import Fetched
from harvester.crawl.quality import OPICScorer, Outlink, PageState
from harvester.crawl.twolevel import SCHEDULERS, Politeness, QueuedURL, Scheduler, make_scheduler

CHECKPOINTS = (0.10, 0.25, 0.50, 0.75, 1.00)
MODELS = {"opic": "quality", "backlinks": "backlinks"}  # model -> the score it orders by
SIGNALLED = ("quality", "backlinks")  # the scores the quality signal multiplies
PEERS = ("bfs", "performance", "quality")
SCORE_BLIND = ("bfs", "performance")  # they never read a score: one run serves both models
PNG = Path(__file__).parent / "schedule.png"
POLITENESS = Politeness(delay=0.0, delay_factor=1.0, per_host=1)


@dataclass(frozen=True)
class Web:
    """The synthetic web: per-host speed, per-page quality, links and seeds (pages are ints)."""

    service_s: list[float]  # by host: seconds one fetch takes, before jitter
    host_of: list[int]  # by page
    quality: list[float]  # by page: the truth the crawl is judged by
    signal: list[float]  # by page: the noisy estimate of it the scorer sees
    links: list[list[int]]  # by page: its outlinks
    seeds: list[int]

    def url(self, page: int) -> str:
        return f"http://{self.host(page)}/p{page}"

    def host(self, page: int) -> str:
        return f"h{self.host_of[page]}.sim"


def build_web(seed: int, hosts: int, noise: float) -> Web:
    rng = random.Random(seed)
    service = [1.0 / math.exp(rng.uniform(math.log(0.5), math.log(50.0))) for _ in range(hosts)]
    slowest = sorted(range(hosts), key=lambda h: -service[h])[: max(1, hosts // 20)]
    scale = [math.exp(rng.gauss(0.0, 0.5)) for _ in range(hosts)]
    for h in slowest:
        scale[h] = 10.0
    pages: list[list[int]] = []
    host_of: list[int] = []
    quality: list[float] = []
    for h in range(hosts):
        count = round(math.exp(rng.uniform(math.log(20), math.log(250))))
        pages.append(list(range(len(host_of), len(host_of) + count)))
        host_of += [h] * count
        quality += [scale[h] * rng.paretovariate(1.5) for _ in range(count)]
    links = _links(rng, pages, quality)
    signal = [q * math.exp(rng.gauss(0.0, noise)) for q in quality]
    seeds = [pages[h][0] for h in sorted(rng.sample(range(hosts), max(1, hosts // 4)))]
    return Web(service, host_of, quality, signal, links, seeds)


def _links(rng: random.Random, pages: list[list[int]], quality: list[float]) -> list[list[int]]:
    weights = [list(accumulate(quality[p] for p in host)) for host in pages]

    def by_quality(h: int) -> int:
        return pages[h][bisect_right(weights[h], rng.random() * weights[h][-1])]

    links: list[list[int]] = [[] for _ in quality]
    for h, host in enumerate(pages):
        for i, page in enumerate(host[1:], 1):
            links[host[rng.randrange(i)]].append(page)
        for page in host:
            for _ in range(rng.randint(1, 6)):
                if rng.random() < 0.9:
                    links[page].append(by_quality(h))
                    continue
                other = rng.randrange(len(pages))
                links[page].append(pages[other][0] if rng.random() < 0.5 else by_quality(other))
    return links


@dataclass
class Crawl:
    """One simulated crawl: the scheduler under test, the scorer, and what was collected."""

    web: Web
    scheduler: Scheduler
    scorer: OPICScorer = field(default_factory=OPICScorer)
    rng: random.Random = field(default_factory=random.Random)
    seq: int = 0
    state: list[int] = field(default_factory=list)  # by page: 0 unseen, 1 queued, 2 fetched
    times: list[float] = field(default_factory=lambda: [0.0])
    collected: list[float] = field(default_factory=lambda: [0.0])  # true quality, by ``times``

    def seed(self) -> None:
        self.state = [0] * len(self.web.quality)
        for page in self.web.seeds:
            self._queue(page, 0, self.scorer.initial(True, "default"))

    def start(self, now: float, item: QueuedURL) -> Fetch:
        page = _page(item.url)
        service = self.web.service_s[self.web.host_of[page]] * math.exp(self.rng.gauss(0, 0.3))
        return Fetch(now + service, page, item, 0.4 * service, self.rng.randint(5_000, 60_000))

    def finish(self, fetch: Fetch) -> None:
        item, page = fetch.item, fetch.page
        self.scheduler.done(item.host, Fetched(fetch.end, fetch.latency, fetch.nbytes, 200))
        self.state[page] = 2
        self.times.append(fetch.end)
        self.collected.append(self.collected[-1] + self.web.quality[page])
        fetched = PageState(item.url, item.depth, item.policy, item.depth, item.scores)
        links = [Outlink(self.web.url(p), "default", item.depth + 1) for p in self.web.links[page]]
        for url, share in self.scorer.on_fetched(fetched, links).items():
            self._credit(_page(url), item.depth + 1, share)

    def _credit(self, page: int, depth: int, share: dict[str, float]) -> None:
        if self.state[page] == 0:
            initial = self.scorer.initial(False, "default")
            self._queue(page, depth, {name: initial[name] + share[name] for name in initial})
        elif self.state[page] == 1:
            self.scheduler.bump(self.web.url(page), self.web.host(page), self._signal(page, share))

    def _queue(self, page: int, depth: int, scores: dict[str, float]) -> None:
        self.seq += 1
        scores = self._signal(page, scores)
        url, host = self.web.url(page), self.web.host(page)
        self.scheduler.add(QueuedURL(url, host, scores, depth, "default", self.seq))
        self.state[page] = 1

    def _signal(self, page: int, scores: dict[str, float]) -> dict[str, float]:
        signal = self.web.signal[page]
        return {k: v * signal if k in SIGNALLED else v for k, v in scores.items()}


@dataclass(order=True, frozen=True)
class Fetch:
    """A simulated fetch in flight, ordered by when it ends."""

    end: float
    page: int
    item: QueuedURL = field(compare=False)
    latency: float = field(compare=False)
    nbytes: int = field(compare=False)


def _page(url: str) -> int:
    return int(url.rsplit("/p", 1)[1])


def simulate(web: Web, policy: str, score: str, args: argparse.Namespace) -> Crawl:
    """Crawl ``web`` with ``policy`` ordering by ``score`` for ``args.budget`` simulated s."""
    scheduler = make_scheduler(policy, politeness=POLITENESS, score=score)
    crawl = Crawl(web, scheduler, rng=random.Random(args.seed))
    crawl.seed()
    running: list[Fetch] = []
    now = 0.0
    while True:
        while len(running) < args.slots and (item := scheduler.next(now)) is not None:
            heapq.heappush(running, crawl.start(now, item))
        now = _next_event(running, scheduler, now, args.slots)
        if now > args.budget:
            return crawl
        while running and running[0].end <= now:
            crawl.finish(heapq.heappop(running))


def _next_event(running: list[Fetch], scheduler: Scheduler, now: float, slots: int) -> float:
    """The time of the next completion or, with a slot free, of the next host waking."""
    wake = scheduler.wake_time() if len(running) < slots else None
    candidates = [running[0].end] if running else []
    if wake is not None and wake > now:
        candidates.append(wake)
    return min(candidates, default=math.inf)


def collected_at(crawl: Crawl, time: float) -> float:
    return crawl.collected[bisect_right(crawl.times, time) - 1]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench schedule", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=240)
    parser.add_argument("--slots", type=int, default=16)
    parser.add_argument("--budget", type=float, default=300.0, help="simulated seconds")
    parser.add_argument("--noise", type=float, default=1.0, help="sigma of the quality signal")
    parser.add_argument("--png", type=Path, default=PNG)
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    web = build_web(args.seed, args.hosts, args.noise)
    report = Report(
        "schedule", ["model", "at", *SCHEDULERS, "cap / bfs", "cap / perf", "cap / qual"]
    )
    report.notes.append(_describe(web, args))
    runs: dict[str, dict[str, Crawl]] = {}
    blind = {p: simulate(web, p, "quality", args) for p in SCORE_BLIND}
    for model, score in MODELS.items():
        crawls = {p: blind.get(p) or simulate(web, p, score, args) for p in SCHEDULERS}
        report.rows += _rows(model, crawls, args, report.figures)
        report.notes.append(_verdict(model, crawls, args))
        runs[model] = crawls
    if _plot(runs, args):
        report.notes.append(f"Plot: {args.png}")
    return report


def _rows(
    model: str, crawls: dict[str, Crawl], args: argparse.Namespace, figures: dict[str, Any]
) -> list[list[object]]:
    rows: list[list[object]] = []
    for fraction in CHECKPOINTS:
        at = fraction * args.budget
        got = {p: collected_at(c, at) for p, c in crawls.items()}
        ratios = [_ratio(got["capability"], got[p]) for p in PEERS]
        rows.append([model, f"{fraction:.0%} ({at:g} s)", *got.values(), *ratios])
        for peer, ratio in zip(PEERS, ratios, strict=True):
            figures[f"{model}_capability_over_{peer}_{round(fraction * 100)}"] = round(ratio, 3)
    pages = {p: len(c.times) - 1 for p, c in crawls.items()}
    rows.append([model, "pages fetched", *pages.values(), "", "", ""])
    figures |= {f"{model}_pages_{p}": n for p, n in pages.items()}
    return rows


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.inf


def _describe(web: Web, args: argparse.Namespace) -> str:
    return (
        f"Web: {args.hosts} hosts, {len(web.quality):,} pages, {len(web.seeds)} seeds, "
        f"total quality {sum(web.quality):,.0f}; {args.slots} slots, {args.budget:g} s budget, "
        f"noise sigma {args.noise:g}, seed {args.seed}. Cells: the true quality collected by "
        "then (the sum over fetched pages)."
    )


def _verdict(model: str, crawls: dict[str, Crawl], args: argparse.Namespace) -> str:
    quarter = 0.25 * args.budget
    cap, bfs = (collected_at(crawls[p], quarter) for p in ("capability", "bfs"))
    first = "met" if cap >= 1.3 * bfs else "NOT met"
    beaten = [
        f"{peer} at {fraction:.0%}"
        for fraction in CHECKPOINTS
        for peer in ("performance", "quality")
        if collected_at(crawls["capability"], fraction * args.budget)
        < collected_at(crawls[peer], fraction * args.budget)
    ]
    second = f"NOT met ({', '.join(beaten)})" if beaten else "met"
    return (
        f"{model}: capability >= 1.3x bfs at 25%: {first} ({_ratio(cap, bfs):.2f}x); "
        f"capability >= performance and quality at every checkpoint: {second}."
    )


def _plot(runs: dict[str, dict[str, Crawl]], args: argparse.Namespace) -> bool:
    """Draw the curves into ``args.png`` if matplotlib is installed; whether it was."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return False
    figure, panels = pyplot.subplots(1, len(runs), figsize=(12, 4.5), sharey=True, squeeze=False)
    for axes, (model, crawls) in zip(panels[0], runs.items(), strict=True):
        for policy, crawl in crawls.items():
            axes.step(crawl.times, crawl.collected, where="post", label=policy)
        axes.set(
            title=f"ordered by {MODELS[model]}", xlabel="simulated time (s)", xlim=(0, args.budget)
        )
    panels[0][0].set_ylabel("true quality collected")
    panels[0][0].legend()
    figure.savefig(args.png, dpi=120, bbox_inches="tight")
    pyplot.close(figure)
    return True
