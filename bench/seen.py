"""``python -m bench seen [--urls N] [--tests T] [--trace-hosts H] [--trace-links L] ...``

The seen-URL set (:mod:`harvester.crawl.seen.seenset`) at scale, after Broder, Najork & Wiener,
"Efficient URL caching for World Wide Web crawling" (WWW 2003):

1. N synthetic URLs (Zipf over 10,000 hosts, a few path segments and an id) are inserted with
   ``add_if_new``, flushing every 1,000,000 as the default buffer does; then membership tests on
   a mixed stream (half seen, drawn uniformly, half new): tests/s against the target, peak RSS
   and the store's size on disk. Two peers, each side by side and alternating per batch: the
   same store with the issue's sparse index of every 4096th key, and an in-memory Python
   ``set`` of the same fingerprints (no disk, and no bound on memory). Also: the share of tests
   the store's bit filter answered, the heap held and the store's pages resident.
2. A crawl trace: a Mercator-like crawler (K hosts crawled round-robin, breadth-first within
   each) walks a synthetic web of H hosts with navigation links on every page, power-law
   in-degree and few links between hosts, recording every link it meets in order. The table
   gives the CLOCK cache's hit rate by cache size (2^8 ... 2^20 entries) and the infinite
   cache's (the share of encounters that are repeats); then the SeenSet itself replays the
   trace with its defaults.

The store lives in ``bench/out/seen/`` and is rebuilt on every run.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import time
from array import array
from bisect import bisect
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise
from pathlib import Path

from bench._seenreport import COLUMNS, curve_rows, figures, notes, scale_rows
from bench.harness import Report
from harvester.crawl.seen.clockcache import ClockCache
from harvester.crawl.seen.fingerprintfile import filter_size
from harvester.crawl.seen.seenset import SeenSet, fingerprint

OUT = Path(__file__).resolve().parent / "out" / "seen"
FLUSH_EVERY = 1_000_000  # the SeenSet default buffer size
CHUNK = 100_000  # URLs generated (untimed) per timed batch
CACHE_SIZES = [2**k for k in range(8, 21)]
MASK64 = 2**64 - 1
SECTIONS = (
    "news", "archive", "items", "people", "events", "docs", "blog", "catalog",
    "research", "about", "media", "projects", "data", "help", "library", "shop",
)  # fmt: skip
TLDS = ("org", "com", "net", "nl", "edu", "de", "io", "fr")


def _mix(x: int) -> int:
    """splitmix64's finaliser: a cheap, well-spread pseudo-random 64-bit value from ``x``."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & MASK64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & MASK64
    return x ^ (x >> 31)


class Hosts:
    """Host names and a Zipf(1) popularity over them."""

    def __init__(self, count: int) -> None:
        self.names = [f"www.{SECTIONS[h % 16]}{h}.example.{TLDS[h % 8]}" for h in range(count)]
        self._cdf = list(accumulate(1 / rank for rank in range(1, count + 1)))

    def pick(self, u: float) -> int:
        """The host at quantile ``u`` (0 <= u < 1) of the popularity distribution."""
        return min(bisect(self._cdf, u * self._cdf[-1]), len(self.names) - 1)


class SyntheticURLs:
    """URL number ``i`` as a pure function of ``i``: distinct for distinct ``i``."""

    def __init__(self, hosts: Hosts) -> None:
        self.hosts = hosts

    def __call__(self, i: int) -> str:
        x = _mix(i)
        host = self.hosts.names[self.hosts.pick((x >> 11) / 2**53)]
        return f"https://{host}/{SECTIONS[x & 15]}/{(x >> 4) % 500}/item-{i}.html"

    def batches(self, indices: Iterator[int]) -> Iterator[list[str]]:
        batch: list[str] = []
        for i in indices:
            batch.append(self(i))
            if len(batch) == CHUNK:
                yield batch
                batch = []
        if batch:
            yield batch


# -- part 1: ten million URLs -------------------------------------------------------------


@dataclass
class Timing:
    """Wall-clock and CPU seconds, summed over batches (CPU time shows what load costs)."""

    wall: float = 0.0
    cpu: float = 0.0

    def run(self, fn: Callable[[list[str]], object], batch: list[str]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        fn(batch)
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu


@dataclass
class Scale:
    urls: int
    tests: int
    insert: Timing
    flush_s: list[float]
    store_mb: float
    contains: Timing
    hit_rate: float
    filtered: float  # the share of the mixed tests the store's filter answered
    filter_mb: float
    peak_rss_mb: float
    ours_anon_mb: float
    ours_file_mb: float  # the store's mapped pages resident after the tests (RssFile growth)
    fingerprint: Timing
    strides: dict[str, Timing]  # ours, and with the index of every 4096th key
    vs_peer: dict[str, Timing]
    peer_anon_mb: float
    many: Timing


def mixed(n: int, tests: int, seed: int, new_from: int) -> Iterator[int]:
    """Indices: half drawn from the ``n`` inserted URLs, half new ones."""
    rng = random.Random(seed)
    for _ in range(tests):
        yield rng.randrange(n) if rng.random() < 0.5 else new_from + rng.randrange(n)


def timed(batches: Iterator[list[str]], fn: Callable[[list[str]], object]) -> Timing:
    timing = Timing()
    for batch in batches:
        timing.run(fn, batch)
    return timing


def alternating(
    contenders: dict[str, Callable[[list[str]], object]], batches: Iterator[list[str]]
) -> dict[str, Timing]:
    """Every contender on each batch, in turn, rotating which goes first."""
    timings = {name: Timing() for name in contenders}
    names = list(contenders)
    for k, batch in enumerate(batches):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            timings[name].run(contenders[name], batch)
    return timings


def insert(seen: SeenSet, make: SyntheticURLs, n: int) -> tuple[Timing, list[float]]:
    """Insert URLs 0..n-1 one by one; flush every FLUSH_EVERY, timed apart."""
    timing, flush_s, done = Timing(), [], 0
    for batch in make.batches(iter(range(n))):
        timing.run(lambda b: [seen.add_if_new(url) for url in b], batch)
        done += len(batch)
        if done % FLUSH_EVERY == 0 or done == n:
            start = time.perf_counter()
            seen.flush()
            flush_s.append(time.perf_counter() - start)
    return timing, flush_s


def contains_all(seen: SeenSet) -> Callable[[list[str]], object]:
    return lambda batch: [url in seen for url in batch]


def fingerprints(batch: list[str]) -> object:
    return [fingerprint(url) for url in batch]


def add_many(seen: SeenSet, size: int = 1000) -> Callable[[list[str]], object]:
    return lambda batch: [
        seen.add_many_if_new(batch[i : i + size]) for i in range(0, len(batch), size)
    ]


def peer_contains(peer: set[int]) -> Callable[[list[str]], object]:
    return lambda batch: [fingerprint(url) in peer for url in batch]


def measure_scale(n: int, tests: int) -> Scale:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    make, path = SyntheticURLs(Hosts(10_000)), OUT / "seen.fp"
    anon_before, file_before = rss_mb("RssAnon"), rss_mb("RssFile")
    with SeenSet(path, buffer_size=n + 1) as seen:
        inserted, flush_s = insert(seen, make, n)
        store_mb = path.stat().st_size / 2**20
        before = seen.stats
        contains = timed(make.batches(mixed(n, tests, 1, n)), contains_all(seen))
        stats = seen.stats
        hit_rate = (stats.cache_hits - before.cache_hits) / tests
        filtered = (stats.filtered - before.filtered) / tests
        filter_mb = filter_size(len(seen)) / 2**20
        peak, ours_anon = peak_rss_mb(), rss_mb("RssAnon") - anon_before
        ours_file = rss_mb("RssFile") - file_before
        fp = timed(make.batches(mixed(n, tests, 1, n)), fingerprints)
        with SeenSet(path, index_stride=4096) as sparse:
            pair = {"ours": contains_all(seen), "4096": contains_all(sparse)}
            strides = alternating(pair, make.batches(mixed(n, tests // 2, 2, n)))
        peer, peer_anon = build_peer(make, n)
        pair = {"ours": contains_all(seen), "peer": peer_contains(peer)}
        vs_peer = alternating(pair, make.batches(mixed(n, tests // 2, 3, n)))
        del peer
        many = timed(make.batches(mixed(n, tests // 2, 4, 3 * n)), add_many(seen))
    return Scale(n, tests, inserted, flush_s, store_mb, contains, hit_rate, filtered, filter_mb,
                 peak, ours_anon, ours_file, fp, strides, vs_peer, peer_anon, many)  # fmt: skip


def build_peer(make: SyntheticURLs, n: int) -> tuple[set[int], float]:
    before = rss_mb("RssAnon")
    peer: set[int] = set()
    for batch in make.batches(iter(range(n))):
        peer.update(map(fingerprint, batch))
    return peer, rss_mb("RssAnon") - before


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def rss_mb(kind: str) -> float:
    """Resident memory of one kind from /proc/self/status: ``RssAnon`` (the heap) or
    ``RssFile`` (pages of mapped files, such as the store)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(kind + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- part 2: a crawl trace and the cache's hit rate -----------------------------------------


@dataclass(frozen=True)
class Web:
    """A synthetic web, each page's links a pure function of the page.

    Every page of a host links to the host's navigation pages (its first ``nav`` pages), to a
    few pages just after it (listings, pagination: what drives the crawl onwards) and to a few
    popular pages of the host (low ids, a power law); now and then to another host, chosen by
    Zipf popularity, mostly to its home page. In-degree is thus a power law within hosts and
    across them, and links mostly stay on their host.
    """

    hosts: Hosts
    seed: int = 1

    def pages(self, host: int) -> int:
        return 50 + 200_000 // (host + 1)

    def nav(self, host: int) -> int:
        return 5 + _mix(host) % 10

    def links(self, host: int, page: int) -> list[tuple[int, int]]:
        rng = random.Random(self.seed << 52 ^ host << 32 ^ page)
        size, nav = self.pages(host), self.nav(host)
        out = [(host, q) for q in range(nav)]
        for _ in range(rng.randint(5, 15)):
            near = page + rng.randint(1, 30)
            popular = nav + int((size - nav) * rng.random() ** 4)
            out.append((host, (near if rng.random() < 0.5 else popular) % size))
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            other = self.hosts.pick(rng.random())
            out.append((other, 0 if rng.random() < 0.6 else self.nav(other) + rng.randrange(20)))
        return out


def crawl_trace(web: Web, wanted: int, active_hosts: int) -> tuple[array[int], int]:
    """Every link met, in order (as ``host << 32 | page``), and the pages fetched, by a crawler
    fetching from ``active_hosts`` hosts round-robin, each host's pages breadth-first."""
    trace: array[int] = array("Q")
    queues: dict[int, deque[int]] = {h: deque([0]) for h in range(0, len(web.hosts.names), 97)}
    waiting, active = deque(queues), deque[int]()
    discovered, pages = {h << 32 for h in queues}, 0
    while len(trace) < wanted and (active or waiting):
        while waiting and len(active) < active_hosts:
            active.append(waiting.popleft())
        host = active.popleft()
        pages += 1
        for other, page in web.links(host, queues[host].popleft()):
            key = other << 32 | page
            trace.append(key)
            if key not in discovered:
                discovered.add(key)
                if other in queues:
                    queues[other].append(page)
                else:
                    queues[other] = deque([page])
                    waiting.append(other)
        if queues[host]:
            active.append(host)
        else:
            del queues[host]
    return trace, pages


def clock_hit_rate(trace: Sequence[int], size: int) -> float:
    cache = ClockCache(size)
    hit, insert = cache.hit, cache.insert
    for key in trace:
        if not hit(key):
            insert(key)
    return cache.hits / len(trace)


@dataclass
class Curve:
    links: int
    distinct: int
    pages: int
    active_hosts: int
    rates: dict[int, float]
    replay: dict[str, float]

    @property
    def infinite(self) -> float:
        return 1 - self.distinct / self.links

    def steepest(self) -> tuple[int, float]:
        """The cache size after which the hit rate rises most in one doubling, and the rise."""
        sizes = sorted(self.rates)
        rises = [(self.rates[b] - self.rates[a], a) for a, b in pairwise(sizes)]
        rise, size = max(rises)
        return size, rise


def measure_curve(hosts: int, links: int, active_hosts: int) -> Curve:
    web = Web(Hosts(hosts))
    trace, pages = crawl_trace(web, links, active_hosts)
    rates = {size: clock_hit_rate(trace, size) for size in CACHE_SIZES}
    return Curve(len(trace), len(set(trace)), pages, active_hosts, rates, replay(web, trace))


def replay(web: Web, trace: array[int]) -> dict[str, float]:
    """The SeenSet, with its defaults, on the trace's URLs: its stats and its speed."""
    names = web.hosts.names

    def urls() -> Iterator[list[str]]:
        for i in range(0, len(trace), CHUNK):
            yield [f"https://{names[k >> 32]}/page/{k & 0xFFFFFFFF}" for k in trace[i : i + CHUNK]]

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    with SeenSet(OUT / "trace.fp") as seen:
        elapsed = timed(urls(), lambda batch: [seen.add_if_new(url) for url in batch]).wall
        stats = seen.stats
    return {
        "tests_per_s": stats.lookups / elapsed,
        "cache": stats.hit_rate,
        "buffer": stats.buffer_hits / stats.lookups,
        "disk": stats.disk_probes / stats.lookups,
        "filter": stats.filtered / stats.lookups,
    }


# -- the report --------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench seen", description=__doc__)
    parser.add_argument("--urls", type=int, default=10_000_000, help="URLs inserted")
    parser.add_argument("--tests", type=int, default=1_000_000, help="membership tests")
    parser.add_argument("--trace-hosts", type=int, default=10_000, help="hosts of the web")
    parser.add_argument("--trace-links", type=int, default=2_000_000, help="links in the trace")
    parser.add_argument("--active-hosts", type=int, default=1_000, help="hosts crawled at once")
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    scale = measure_scale(args.urls, args.tests)
    curve = measure_curve(args.trace_hosts, args.trace_links, args.active_hosts)
    shutil.rmtree(OUT, ignore_errors=True)
    report = Report("seen", COLUMNS)
    report.rows += scale_rows(scale) + curve_rows(curve)
    report.figures |= figures(scale, curve)
    report.notes += notes(scale, curve)
    return report
