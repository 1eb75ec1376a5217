"""The link-crawling fallback against real servers on loopback: generated sites and a
deliberately hostile one."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.archive.repair import verify_warc
from harvester.crawl.archivist import Archived, Archivist
from harvester.crawl.crawler import Crawler
from harvester.crawl.seen.seenset import SeenSet
from harvester.http.exchange import HttpExchange
from harvester.run.assembly import build_harvest
from harvester.settings import load_settings
from harvester.storage.protocol import Resource
from tests.conftest import start_plain_site
from tests.servers import PagesServer, RunningServer, serve_pages, start_wsgi
from tests.sites import Manifest, make_site
from tests.test_harvest import records


def crawl(url: str, out: Path, **flags: object) -> dict[str, object]:
    settings = load_settings(site_url=url, out=out, quiet=True, environ={}, **flags)
    return build_harvest(settings).run().as_dict()


def url_of(server: RunningServer, rel: str) -> str:
    return f"{server.url}/{quote(os.fsencode(rel), safe='/')}"


@pytest.fixture()
def plain_site(tmp_path: Path) -> Iterator[tuple[Manifest, RunningServer, Path]]:
    """A generated site on a server with no OAI-PMH endpoint where the harvester looks, and no
    ResourceSync source."""
    site = make_site(tmp_path / "www", pages=50, seed=4)
    index = tmp_path / "index.sqlite"
    with start_plain_site(site.root, index) as server:
        yield site, server, index


@pytest.fixture(scope="module")
def hostile() -> Iterator[RunningServer]:
    with start_wsgi("tests.hostile_site:hostile_site", {}) as server:
        yield server


def responses(out: Path) -> Counter[str]:
    return Counter(h["WARC-Target-URI"] for t, h, _c in records(out) if t == "response")


def test_crawl_archives_the_linked_set(plain_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, server, _index = plain_site
    summary = crawl(server.url + "/", tmp_path / "out", delay_factor=0.0)
    got = responses(tmp_path / "out")
    linked = {url_of(server, p) for p in site.linked}
    assert linked <= set(got)
    assert max(got.values()) == 1
    assert not {url_of(server, p) for p in site.unlinked} & set(got), "no link reaches those"
    assert summary["endpoint"] is None and summary["failed"] == 0
    assert 0 < summary["seen_hit_rate"] <= 1  # type: ignore[operator]
    outlinks = [
        (h, c)
        for t, h, c in records(tmp_path / "out")
        if t == "metadata" and h.get("Content-Type") == "application/warc-fields"
    ]
    home = next(c for h, c in outlinks if h["WARC-Target-URI"] == url_of(server, "index.html"))
    assert home.count(b"outlink: ") >= 5
    cdx = (tmp_path / "out" / "indexes" / "index.cdxj").read_text()
    assert "warc-fields" not in cdx and "application/xml" not in cdx


def test_max_pages_counts_the_pages_in_flight(plain_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``--max-pages`` is a ceiling: the requests in flight count. It counted only pages
    answered, so with 16 at once a crawl fetched up to 15 more than asked."""
    _site, server, _index = plain_site
    out = tmp_path / "out"
    summary = crawl(
        server.url + "/", out, delay_factor=0.0, max_pages=10, concurrency=16, crawl_per_host=8
    )
    assert summary["fetched"] == 10
    assert sum(responses(out).values()) == 10


def test_hostile_server_is_survived(hostile: RunningServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    summary = crawl(hostile.url + "/", out, delay_factor=0.0, max_size=1024 * 1024, max_time=60)
    assert time.monotonic() - started < 60, "nothing may hang the crawl"
    recs = records(out)
    by_url = {
        h["WARC-Target-URI"].removeprefix(hostile.url): h for t, h, _c in recs if t == "response"
    }
    assert {f"/page{i}.html" for i in range(8)} <= set(by_url), "the ordinary pages are kept"
    assert "/private/secret.html" not in by_url, "robots.txt is obeyed"
    assert "/unlinked.html" in by_url, "the sitemap named it"
    assert by_url["/huge"]["WARC-Truncated"] == "length"
    assert by_url["/short"]["WARC-Truncated"] == "disconnect"
    assert by_url.get("/slow", {}).get("WARC-Truncated", "time") == "time"
    assert "/many-headers" not in by_url
    assert {"/loop-a", "/loop-b"} <= set(by_url)  # each once: the seen test breaks the loop
    # stored as sent, never inflated (warcio's reader would inflate it: read the block length)
    assert int(by_url["/bomb"]["Content-Length"]) < 1024 * 1024
    calendar = [u for u in by_url if u.startswith("/calendar")]
    assert 10 <= len(calendar) <= 51 and summary["refused"] >= 1  # type: ignore[operator]
    for path in (out / "warcs").iterdir():
        verify_warc(path)


def test_politeness_spacing_seen_by_the_server(hostile: RunningServer, tmp_path: Path) -> None:
    before = json.loads(urllib.request.urlopen(hostile.url + "/_log").read())
    crawl(
        hostile.url + "/",
        tmp_path / "out",
        delay=0.4,
        crawl_per_host=1,
        max_pages=8,
        exclude=(r"/(slow|bomb|huge|calendar)",),
    )
    log = json.loads(urllib.request.urlopen(hostile.url + "/_log").read())[len(before) :]
    prerequisites = (
        "/robots.txt",
        "/sitemap.xml",
        "/_log",
        "/oai?verb=Identify",
        "/modoai?verb=Identify",
        "/.well-known/resourcesync",
    )
    starts = [t for t, path in log if path not in prerequisites]
    assert len(starts) >= 5
    # The server stamps a request when its process gets to it, late by what the machine's load
    # makes it (0.13 s seen), which shortens the next gap as much: so each request comes a
    # delay after the one before it counted from the first (whose stamp may be 0.1 s late),
    # and no two come together (a gap is at least half the delay).
    assert all(t - starts[0] >= 0.4 * k - 0.1 for k, t in enumerate(starts)), starts
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.4 / 2, gaps


def test_rerun_revisits_with_conditional_get(plain_site, tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    site, server, index = plain_site
    out = tmp_path / "out"
    crawl(server.url + "/", out, delay_factor=0.0)
    before = len(records(out))
    gone = next(p for p in sorted(site.linked) if p.startswith("news/"))
    (site.root / gone).unlink()
    from server_module.index.fileindex import FileIndex

    with FileIndex(index, site.root, server.url) as idx:
        idx.refresh()
    summary = crawl(server.url + "/", out, delay_factor=0.0)
    new = records(out)[before:]
    kinds = Counter(t for t, _h, _c in new)
    assert kinds["revisit"] >= len(site.linked) - 2
    assert all(
        h["WARC-Profile"].endswith("identical-payload-digest") for t, h, _c in new if t == "revisit"
    )
    from harvester.storage.sqlite.state import SQLiteState

    with SQLiteState(out / "state.sqlite") as state:
        # its first 404: retried by the next crawl, gone if it answers the same (failures.py)
        assert state.get(url_of(server, gone)).status == "failed"  # type: ignore[union-attr]
    assert summary["unchanged"] >= len(site.linked) - 2
    assert f"{url_of(server, gone)}: HTTP 404 " in caplog.text  # logged, as a listed 404 is


@pytest.mark.slow
def test_sigkill_then_resume_loses_nothing(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=250, seed=8)
    out = tmp_path / "out"
    with start_plain_site(site.root, tmp_path / "index.sqlite") as server:
        argv = [
            sys.executable,
            "-m",
            "harvester.cli",
            "harvest",
            server.url + "/",
            "--out",
            str(out),
            "--quiet",
            "--mode",
            "crawl",
            "--delay-factor",
            "0",
        ]
        for delay in (1.2, 1.8, 2.4):
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            proc.kill()
            proc.wait()
        assert subprocess.run(argv, capture_output=True, timeout=300).returncode == 0
        linked = {url_of(server, p) for p in site.linked}
    recs = records(out)
    got = Counter(h["WARC-Target-URI"] for t, h, _c in recs if t == "response")
    assert linked <= set(got), "no discovered URL is lost"
    digests = Counter(
        (h["WARC-Target-URI"], h["WARC-Payload-Digest"]) for t, h, _c in recs if t == "response"
    )
    assert max(digests.values()) == 1, "a refetched page in flight becomes a revisit"
    for path in (out / "warcs").iterdir():
        assert path.name.endswith(".warc.gz")
        verify_warc(path)


@pytest.mark.parametrize("groups", [1, 3])
def test_kill_between_archive_and_commit_loses_no_link(tmp_path: Path, groups: int) -> None:
    """SIGKILL right after a page's WARC group reached the disk, before the state recorded
    it (``tests/killed_harvester.py``): the resumed crawl fetches the page again, as a
    revisit of the recovered capture, and queues its links. (The first page is the root:
    lose its links and nothing else is ever crawled.)"""
    site = make_site(tmp_path / "www", pages=30, seed=8)
    out = tmp_path / "out"
    with start_plain_site(site.root, tmp_path / "index.sqlite") as server:
        args = ["harvest", server.url + "/", "--out", str(out), "--quiet", "--mode", "crawl"]
        args += ["--delay-factor", "0"]
        killed = subprocess.run(
            [sys.executable, "-m", "tests.killed_harvester", str(groups), *args],
            capture_output=True,
            timeout=120,
        )
        assert killed.returncode == -9, killed.stderr.decode()[-2000:]
        (open_file,) = (out / "warcs").glob("*.warc.gz.open")
        with open(open_file, "rb") as fh:
            kinds = [(r.rec_type, r.rec_headers["WARC-Target-URI"]) for r in ArchiveIterator(fh)]
            dying = [uri for kind, uri in kinds if kind == "response"][-1]
        resumed = subprocess.run(
            [sys.executable, "-m", "harvester.cli", *args], capture_output=True, timeout=300
        )
        assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
        linked = {url_of(server, p) for p in site.linked}
    recs = records(out)
    got = Counter(h["WARC-Target-URI"] for t, h, _c in recs if t == "response")
    assert linked <= set(got), "no discovered URL is lost"
    assert got[dying] == 1
    (revisit,) = (h for t, h, _c in recs if t == "revisit" and h["WARC-Target-URI"] == dying)
    assert revisit["WARC-Profile"].endswith("identical-payload-digest")
    assert not open_file.exists(), "the killed run's file was repaired and finished"


PAGES = {
    "/": b'<a href="/a.html">a</a> <a href="/b.html">b</a>',
    "/a.html": b"<p>a</p>",
    "/b.html": b"<p>b</p>",
}


class _HeldArchivist:
    """The crawl's archivist, with the archiving of the first linked page (``a.html`` or
    ``b.html``, as the scheduler orders them) kept waiting (5 s at most) until the server
    has been asked for the other; ``waited`` says whether it was."""

    def __init__(self, inner: Archivist, server: PagesServer) -> None:
        self.inner, self.server = inner, server
        self.holding = False
        self.waited: list[bool] = []

    async def archive(self, res: Resource, result: HttpExchange) -> Archived:
        path = urlsplit(result.url).path
        if path in ("/a.html", "/b.html") and not self.holding:
            self.holding = True
            other = self.server.event("/b.html" if path == "/a.html" else "/a.html")
            self.waited.append(await asyncio.to_thread(other.wait, 5.0))
        return await self.inner.archive(res, result)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_host_is_asked_for_its_next_url_while_a_page_is_archived(tmp_path: Path) -> None:
    """One connection to the host: once a page's response is in, the host's next URL goes
    out while the page is archived (in the archiving process: a round trip, about 1 ms a
    page), not after. It waited for the archiving before: one connection crawled the bench
    site 2.2x slower than it does now."""
    with serve_pages(PAGES) as server:
        settings = load_settings(
            site_url=server.url + "/",
            out=tmp_path / "out",
            quiet=True,
            environ={},
            mode="crawl",
            crawl_per_host=1,
            delay_factor=0.0,
            commit_seconds=60.0,  # no commit due wakes the crawl meanwhile
            crawl_processes=1,
        )
        harvest = build_harvest(settings)
        build, held = harvest.crawler_factory, []

        def holding(*args: Any, **kwargs: Any) -> tuple[Crawler, SeenSet]:
            crawler, seen = build(*args, **kwargs)
            crawler.archivist = _HeldArchivist(crawler.archivist, server)
            held.append(crawler.archivist)
            return crawler, seen

        harvest.crawler_factory = holding
        summary = harvest.run().as_dict()
    assert summary["fetched"] == 3
    assert held[0].waited == [True]
