"""Crawl policies end to end: a real crawl of two loopback hosts, judged by its WARC order.

Host F (127.0.0.2) holds the favored seed, host D (127.0.0.3) the distrusted one, and their
pages link to each other. The crawls run with ``schedule = "quality"`` and one fetch slot:

- ``quality`` serves the best-scored URL of any ready host, so the order is a function of the
  scores alone, which is where a policy acts. ``capability`` would multiply each score by its
  host's measured speed (a distrusted page on a fast host may then rightly come first) and
  ``bfs``/``performance`` read no score at all.
- One slot (``concurrency = 1``) makes each choice after the previous page's links are queued;
  with more, a distrusted URL may start while the favored page that links to better ones is
  still in flight, and "last" would only hold on average.

The score is the default ``backlinks``: each link adds ``0.9 ** depth`` times its policy's
multiplier, the favor multiplier fading with distance from the seed (4.0, 3.1, 2.47, ...).
The favored chain is deep enough (six links) that its far end scores below an unpoliced seed
(1.0), so the order asserted cannot come from the favor boost alone; :func:`test_control`
shows the same graph interleaves when nothing is distrusted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.run.assembly import build_harvest
from harvester.settings import load_settings
from tests.multihost import graph_web
from tests.servers import RunningServer

F, D = 0, 1
GRAPH: list[dict[str, list[list[object]]]] = [
    {  # host F
        "/": [[F, "/f1.html"], [F, "/switch/s1.html"]],
        "/f1.html": [[F, "/f2.html"]],
        "/f2.html": [[F, "/f3.html"], [D, "/d2.html"]],  # a favored link into D's subtree
        "/f3.html": [[F, "/f4.html"]],
        "/f4.html": [[F, "/f5.html"]],
        "/f5.html": [[F, "/f6.html"]],
        "/f6.html": [[F, "/"]],
        "/switch/s1.html": [[F, "/hidden.html"], [F, "/f1.html"]],  # the switch rule's target
        "/hidden.html": [],  # linked only from the switched page
        "/from-d.html": [],  # linked only from a distrusted page of D
    },
    {  # host D
        "/": [[D, "/d1.html"], [D, "/d2.html"], [F, "/f3.html"]],
        "/d1.html": [[D, "/d3.html"], [F, "/from-d.html"]],
        "/d2.html": [[D, "/d4.html"]],  # favored (F links it): a distrusted link can't demote
        "/d3.html": [],
        "/d4.html": [],
    },
]
# What each page is when F is favored, D distrusted and the rule distrusts /switch/:
FAVORED = {(F, p) for p in ("/", "/f1.html", "/f2.html", "/f3.html", "/f4.html")}
FAVORED |= {(F, "/f5.html"), (F, "/f6.html"), (D, "/d2.html"), (D, "/d4.html")}
DISTRUSTED = {(D, "/"), (F, "/switch/s1.html")}  # the seed and the switched page
BEHIND = {(D, "/d1.html"), (D, "/d3.html"), (F, "/from-d.html"), (F, "/hidden.html")}
# BEHIND: reached only through distrusted pages, so distrusted too (or never, without follow)
RULE = '[[rule]]\nmatch = "/switch/"\npolicy = "distrust"\n'


@pytest.fixture(scope="module")
def hosts() -> Iterator[list[RunningServer]]:
    with graph_web(GRAPH, ["127.0.0.2", "127.0.0.3"]) as servers:
        yield servers


def crawl(hosts: list[RunningServer], tmp_path: Path, policy: str) -> list[tuple[int, str]]:
    """Crawl from both seeds under ``policy`` (TOML) to completion; the (host, path) of every
    response record, in WARC order."""
    toml = tmp_path / "policy.toml"
    toml.write_text(policy.format(f=hosts[F].url + "/", d=hosts[D].url + "/"), encoding="utf-8")
    out = tmp_path / "out"
    settings = load_settings(
        site_url=hosts[F].url + "/",
        seeds=(hosts[D].url + "/",),
        out=out,
        mode="crawl",
        schedule="quality",
        concurrency=1,
        delay=0.0,
        delay_factor=0.0,
        max_time=20.0,
        policy=toml,
        quiet=True,
        environ={},
    )
    summary = build_harvest(settings).run().as_dict()
    assert summary["failed"] == 0
    netloc = {urlsplit(server.url).netloc: h for h, server in enumerate(hosts)}
    order = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    url = urlsplit(record.rec_headers.get_header("WARC-Target-URI"))
                    order.append((netloc[url.netloc], url.path or "/"))
    assert len(order) == len(set(order)), "each page once"
    return order


POLICY = """
[[seed]]
url = "{f}"
policy = "favor"

[[seed]]
url = "{d}"
policy = "distrust"
"""


def test_distrusted_pages_come_after_every_favored_page(
    hosts: list[RunningServer], tmp_path: Path
) -> None:
    order = crawl(hosts, tmp_path, POLICY + RULE)
    assert set(order) == FAVORED | DISTRUSTED | BEHIND, "follow = true: everything is reached"
    last_favored = max(order.index(page) for page in FAVORED)
    first_distrusted = min(order.index(page) for page in DISTRUSTED | BEHIND)
    assert last_favored < first_distrusted, order
    # the switch rule took effect mid-crawl: the page, linked from the favored seed and
    # queued right after it, waited until every favored page was fetched
    assert order.index((F, "/switch/s1.html")) > last_favored, order


def test_distrusted_links_are_not_followed(hosts: list[RunningServer], tmp_path: Path) -> None:
    follow = "\n[policies.distrust]\nfollow = false\n"
    order = crawl(hosts, tmp_path, POLICY + follow + RULE)
    # the distrusted seed and the switched page are fetched; nothing behind them is, though
    # the first test shows every one of those pages is reachable
    assert set(order) == FAVORED | DISTRUSTED, order
    assert not set(order) & BEHIND


def test_control_without_distrust_interleaves(hosts: list[RunningServer], tmp_path: Path) -> None:
    """The same graph with D left at ``default`` and no rule: D's seed (score 1.0) and the
    /switch/ page (favored, 2.79) overtake the far end of the favored chain, so the order the
    first test asserts is the policies' doing, not the graph's."""
    order = crawl(hosts, tmp_path, POLICY.replace('"distrust"', '"default"'))
    assert set(order) == FAVORED | DISTRUSTED | BEHIND
    assert order.index((D, "/")) < order.index((F, "/f6.html")), order
    assert order.index((F, "/switch/s1.html")) < order.index((F, "/f2.html")), order
