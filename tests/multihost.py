"""One host of a linked multi-host web, as a WSGI app, throttled to its own speed.

Crawl scheduling is judged on several hosts of different speeds whose pages carry a known
worth. Each host runs in its own server process (``tests.servers.start_wsgi``) on its own
loopback address, and every process builds the same web from the same arguments, so the
pages, links and qualities are a pure function of them. Two factories:

- :func:`site`: one host of the synthetic web of :func:`synthetic_web` (the model of
  ``bench/schedule.py``: host speeds spread log-evenly, heavy-tailed page quality, the
  slowest host holding many of the best pages, links drawn in proportion to quality).
- :func:`graph_site`: a small hand-drawn graph, for tests that need one exact link structure.

A page is ``/`` (page 0) or ``/p<n>.html``. Its quality is in ``<meta name="quality">``; its
links to its own host are relative and those to other hosts absolute. Ports are handed out by
the kernel as each server binds, so no host can know its peers' addresses when it starts:
the caller POSTs the base URLs of all hosts, in host order, to ``/_peers`` of each (see
:func:`start_web`), and until then every page answers 503. ``GET /_peers`` answers 200 at any
time, for the readiness check. ``GET /_log`` lists every other request as ``[arrival, path]``
(Unix time), so a caller can tell when a crawl's first request arrived; ``GET /_spans`` lists
every request but the control ones (robots.txt and sitemaps included) as ``[arrival, end]``,
its end when the last byte was handed to the server, so a caller can tell how many requests
were ever in flight at once (:func:`most_at_once`).

The throttle: every response waits ``latency`` seconds before its headers, and a body is then
sent in chunks paced at ``bandwidth`` bytes/s; both are multiplied per request by a log-normal
jitter factor (sigma ``jitter``). Requests are served concurrently (one thread each).
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
import urllib.request
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from tests.servers import RunningServer, start_wsgi

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
CHUNK = 4096
LATENCY_SHARE = 0.4  # of an average page's fetch time; the rest is the body's transfer
MEAN_SIZE = 32_500  # bytes: pages are 5-60 kB, uniformly

Link = tuple[int, str]  # (host index, path)
Graph = dict[str, list[list[Any]]]  # a host's paths to their links, each [host index, path]


@dataclass(frozen=True)
class Page:
    quality: float
    size: int  # body bytes, padding included
    links: tuple[Link, ...]


@dataclass(frozen=True)
class Web:
    """Pages by host and path, and the seconds one average page of each host takes."""

    hosts: tuple[dict[str, Page], ...]
    service_s: tuple[float, ...]

    def quality(self, host: int, path: str) -> float:
        page = self.hosts[host].get(path)
        return 0.0 if page is None else page.quality

    def total_quality(self) -> float:
        return sum(p.quality for pages in self.hosts for p in pages.values())

    def pages(self) -> int:
        return sum(len(pages) for pages in self.hosts)


def path_of(page: int) -> str:
    """The path of page ``page`` of a host.

    >>> path_of(0), path_of(7)
    ('/', '/p7.html')
    """
    return "/" if page == 0 else f"/p{page}.html"


def service_times(hosts: int, fastest: float, slowest: float) -> list[float]:
    """Per-host seconds per page, log-evenly spread from ``fastest`` to ``slowest``.

    >>> [round(t, 3) for t in service_times(3, 0.01, 0.16)]
    [0.01, 0.04, 0.16]
    """
    if hosts == 1:
        return [fastest]
    ratio = slowest / fastest
    return [fastest * ratio ** (h / (hosts - 1)) for h in range(hosts)]


def synthetic_web(
    seed: int = 1,
    hosts: int = 8,
    min_pages: int = 200,
    max_pages: int = 400,
    fastest: float = 0.01,
    slowest: float = 0.2,
    slow_share: float = 0.22,
) -> Web:
    """The web of ``bench/schedule.py``, sized for a few loopback hosts.

    Host speeds are spread log-evenly (in a seeded order); page counts are log-uniform over
    ``min_pages..max_pages``; a page's quality is its host's scale times Pareto(1.5). Scales
    are log-normal (sigma 0.5), except the slowest host's, set so that it holds ``slow_share``
    of the web's quality: the simulation's slowest 5 % of hosts hold 22 % (scale 10 on 240
    hosts), and scale 10 on one host of a few would hold most of it. Every page is linked
    from an earlier page of its host; each page has 1-6 more links, 90 % to a page of its
    host drawn in proportion to quality, 10 % to another host: its root half the time, else a
    page drawn in proportion to quality over the whole web (good pages attract links from
    everywhere, so links carry the only signal of a host's worth a crawler can see).
    """
    if not 0 < slow_share < 1:
        raise ValueError(f"slow_share must be between 0 and 1, not {slow_share}")
    rng = random.Random(seed)
    service = service_times(hosts, fastest, slowest)
    rng.shuffle(service)
    slow = max(range(hosts), key=lambda h: service[h])
    scale = [math.exp(rng.gauss(0.0, 0.5)) for _ in range(hosts)]
    counts = [round(math.exp(rng.uniform(math.log(min_pages), math.log(max_pages)))) for _ in scale]
    tails = [[rng.paretovariate(1.5) for _ in range(n)] for n in counts]
    if hosts > 1:
        others = sum(scale[h] * sum(tails[h]) for h in range(hosts) if h != slow)
        scale[slow] = slow_share / (1 - slow_share) * others / sum(tails[slow])
    quality = [[scale[h] * t for t in tails[h]] for h in range(hosts)]
    links = _links(rng, quality)
    pages = tuple(
        {
            path_of(i): Page(q, rng.randint(5_000, 60_000), tuple(links[h][i]))
            for i, q in enumerate(quality[h])
        }
        for h in range(hosts)
    )
    return Web(pages, tuple(service))


def _links(rng: random.Random, quality: list[list[float]]) -> list[list[list[Link]]]:
    flat = [(h, i) for h, qs in enumerate(quality) for i in range(len(qs))]
    everywhere = list(accumulate(quality[h][i] for h, i in flat))
    by_host = [list(accumulate(qs)) for qs in quality]

    def draw(weights: list[float]) -> int:
        return min(bisect_right(weights, rng.random() * weights[-1]), len(weights) - 1)

    links: list[list[list[Link]]] = [[[] for _ in qs] for qs in quality]
    for h, qs in enumerate(quality):
        for i in range(1, len(qs)):
            links[h][rng.randrange(i)].append((h, path_of(i)))
        for i in range(len(qs)):
            for _ in range(rng.randint(1, 6)):
                if rng.random() < 0.9 or len(quality) == 1:
                    links[h][i].append((h, path_of(draw(by_host[h]))))
                elif rng.random() < 0.5:
                    links[h][i].append(
                        (rng.choice([o for o in range(len(quality)) if o != h]), "/")
                    )
                else:
                    other, page = flat[draw(everywhere)]
                    links[h][i].append((other, path_of(page)))
    return links


def site(index: int, *, seed: int = 1, jitter: float = 0.3, **shape: Any) -> WSGIApp:
    """Host ``index`` of :func:`synthetic_web` (``seed`` and ``shape``, its other arguments),
    throttled to its own speed: an average page takes its service time, 40 % of it waiting
    and 60 % transferring the body."""
    web = synthetic_web(seed, **shape)
    service = web.service_s[index]
    bandwidth = MEAN_SIZE / ((1 - LATENCY_SHARE) * service)
    throttle = Throttle(LATENCY_SHARE * service, bandwidth, jitter, seed * 1000 + index)
    return _app(index, web.hosts[index], throttle)


def graph_site(
    index: int,
    graph: Graph,
    *,
    latency: float = 0.0,
    bandwidth: float | None = None,
) -> WSGIApp:
    """Host ``index`` of a hand-drawn web: ``graph`` maps this host's paths to their links,
    each ``[host index, path]``; every page has quality 1 and about 1 kB."""
    pages = {
        path: Page(1.0, 1024, tuple((int(h), str(p)) for h, p in links))
        for path, links in graph.items()
    }
    return _app(index, pages, Throttle(latency, bandwidth, 0.0, index))


class Throttle:
    """How long a response waits for its headers and how fast its body then flows."""

    def __init__(self, latency: float, bandwidth: float | None, jitter: float, seed: int) -> None:
        self.latency = latency
        self.bandwidth = bandwidth
        self.jitter = jitter
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def factor(self) -> float:
        with self._lock:
            return math.exp(self._rng.gauss(0.0, self.jitter)) if self.jitter else 1.0

    def send(self, body: bytes, factor: float) -> Iterator[bytes]:
        """``body`` in chunks, each sent no earlier than the pace allows."""
        if not self.bandwidth:
            yield body
            return
        start, per_byte = time.monotonic(), factor / self.bandwidth
        for offset in range(0, len(body), CHUNK):
            chunk = body[offset : offset + CHUNK]
            due = start + (offset + len(chunk)) * per_byte
            time.sleep(max(0.0, due - time.monotonic()))
            yield chunk


def _app(index: int, pages: dict[str, Page], throttle: Throttle) -> WSGIApp:
    peers: list[str] = []
    log: list[tuple[float, str]] = []  # (arrival, path) of every request but the control ones
    spans: list[tuple[float, float]] = []  # (arrival, end) of every other request

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/_peers":
            return _peers(environ, start_response, peers)
        if path == "/_log":
            return _send(start_response, "200 OK", json.dumps(log).encode(), "application/json")
        if path == "/_spans":
            return _send(start_response, "200 OK", json.dumps(spans).encode(), "application/json")
        arrival = time.time()
        log.append((arrival, path))  # list.append is atomic: no lock needed
        factor = throttle.factor()
        time.sleep(throttle.latency * factor)
        page = pages.get(path)
        if not peers:
            answer = _send(start_response, "503 Service Unavailable", b"peers not set yet")
            return _spanned(iter(answer), arrival, spans)
        if page is None:  # robots.txt and sitemaps too: they count as requests in flight
            answer = _send(start_response, "404 Not Found", b"not found")
            return _spanned(iter(answer), arrival, spans)
        body = render(index, path, page, peers)
        headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))]
        start_response("200 OK", headers)
        return _spanned(throttle.send(body, factor), arrival, spans)

    return app


def _spanned(
    chunks: Iterator[bytes], arrival: float, spans: list[tuple[float, float]]
) -> Iterator[bytes]:
    yield from chunks
    spans.append((arrival, time.time()))


def captures(out: Path) -> Counter[str]:
    """How many response (or revisit) records each URL has, over every worker's WARC files."""
    seen: Counter[str] = Counter()
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "revisit"):
                    seen[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return seen


def most_at_once(spans: Sequence[Sequence[float]]) -> int:
    """The most requests in flight at one moment, from ``[arrival, end]`` spans.

    >>> most_at_once([[0, 2], [1, 3], [2, 4], [5, 6]])
    2
    """
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    most = now = 0
    for _, step in events:  # an end sorts before an arrival at the same moment
        now += step
        most = max(most, now)
    return most


def _peers(environ: dict[str, Any], start_response: StartResponse, peers: list[str]) -> list[bytes]:
    if environ["REQUEST_METHOD"] == "POST":
        size = int(environ.get("CONTENT_LENGTH") or 0)
        peers[:] = [str(url).rstrip("/") for url in json.loads(environ["wsgi.input"].read(size))]
    return _send(start_response, "200 OK", json.dumps(peers).encode(), "application/json")


def render(index: int, path: str, page: Page, peers: Sequence[str]) -> bytes:
    """The page's HTML, padded to its size."""
    hrefs = [p if h == index else peers[h] + p for h, p in page.links]
    items = "".join(f'<li><a href="{href}">{href}</a></li>' for href in hrefs)
    html = (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{path}</title>'
        f'<meta name="quality" content="{page.quality!r}"></head>'
        f"<body><h1>{path}</h1><ul>{items}</ul><p>"
    )
    tail = "</p></body></html>"
    filler = max(0, page.size - len(html) - len(tail))
    words = ("lorem ipsum dolor sit amet " * (filler // 27 + 1))[:filler]
    return (html + words + tail).encode()


def _send(
    start_response: StartResponse, status: str, body: bytes, ctype: str = "text/plain"
) -> list[bytes]:
    start_response(status, [("Content-Type", ctype), ("Content-Length", str(len(body)))])
    return [body]


def start_web(
    factory: str, kwargs: Sequence[dict[str, object]], addresses: Sequence[str]
) -> list[RunningServer]:
    """Start host ``i`` with ``kwargs[i]`` on ``addresses[i]`` (all at once), then tell every
    host the base URLs of all; stops what it started if any host fails to start."""
    with ThreadPoolExecutor(max_workers=len(addresses) or 1) as pool:
        futures = [
            pool.submit(start_wsgi, factory, kw, host=host, ready_path="/_peers")
            for kw, host in zip(kwargs, addresses, strict=True)
        ]
    started = [f.result() for f in futures if f.exception() is None]
    try:
        if len(started) < len(futures):
            raise next(e for f in futures if (e := f.exception()) is not None)
        urls = json.dumps([s.url for s in started]).encode()
        for server in started:
            _post(server.url + "/_peers", urls)
    except BaseException:
        for server in started:
            server.stop()
        raise
    return started


@contextmanager
def graph_web(
    graphs: Sequence[Graph],
    addresses: Sequence[str],
    latency: float | Sequence[float] = 0.0,
) -> Iterator[list[RunningServer]]:
    """The hand-drawn web of ``graphs``, host ``i`` a :func:`graph_site` of ``graphs[i]`` on
    ``addresses[i]``, answering after ``latency`` seconds (one for all, or one per host);
    stopped on leaving."""
    latencies = [latency] * len(graphs) if isinstance(latency, float | int) else latency
    kwargs = [
        {"index": h, "graph": graph, "latency": wait}
        for h, (graph, wait) in enumerate(zip(graphs, latencies, strict=True))
    ]
    servers = start_web("tests.multihost:graph_site", kwargs, addresses)
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


def chains(hosts: int, pages: int) -> list[Graph]:
    """The graphs of a web of ``hosts`` chains: each of a host's ``pages`` links the next one of
    its host and the next host's root.

    >>> chains(2, 2)[1]
    {'/': [[1, '/p1.html'], [0, '/']], '/p1.html': [[0, '/']]}
    """
    graphs: list[Graph] = []
    for host in range(hosts):
        graph: Graph = {}
        for page in range(pages):
            links: list[list[Any]] = [[host, path_of(page + 1)]] if page < pages - 1 else []
            graph[path_of(page)] = [*links, [(host + 1) % hosts, "/"]]
        graphs.append(graph)
    return graphs


def _post(url: str, body: bytes) -> None:
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()
