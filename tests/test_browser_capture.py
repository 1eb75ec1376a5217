"""Browser capture (``--browser``) against a site that builds itself with JavaScript
(``tests/js_site.py``), in Debian's real Chromium: the plain crawl and wget archive the start
page alone; the browser crawl, run as the README shows it, archives everything the pages load
and replays in pywb and in Chromium with the site stopped."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders

from harvester.browser.browser import Browser, PageLimits
from tests.js_site import TONE, serve_js_site
from tests.pywb import replay
from tests.schemas import assert_valid
from tests.test_harvest import records, warc_records
from tests.warcrules import broken_rules, fastwarc_check

CHROMIUM = shutil.which("chromium") or "chromium"  # `make sysdeps` installs it
EVERYTHING = {
    "/",
    "/api/nav.json",
    "/api/content.json",
    "/api/submit",
    "/style.css",
    "/bg.png",
    "/lazy.png",
    "/section/a",
    "/section/b",
    "/deep/a",
    "/deep/b",
    "/api/deep/a.json",
    "/api/deep/b.json",
    "/navigated",
    "/hang",
    "/endless",
    "/api/feed?n=0",
    "/media",
    "/media/tone.wav",
    "/events",
    "/worker/",
    "/worker/data.json",
}
PAGES = {"/", "/section/a", "/section/b", "/deep/a", "/deep/b", "/navigated", "/hang", "/endless"}
PAGES |= {"/media", "/events", "/worker/"}


def harvester(*args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    """``harvester ARGS`` in a process of its own, which prints whether it imported the
    browser package."""
    code = (
        "import sys; from harvester.cli import main; code = main(sys.argv[1:]);"
        " print('imported-browser', 'harvester.browser' in sys.modules); sys.exit(code)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout
    )


def paths(out: Path, kind: str = "response") -> Counter[str]:
    found: Counter[str] = Counter()
    for warc_type, headers, _ in records(out):
        uri = headers.get("WARC-Target-URI", "")
        if warc_type == kind and uri.startswith("http"):
            parts = urlsplit(uri)
            found[parts.path + (f"?{parts.query}" if parts.query else "")] += 1
    return found


@dataclass
class Crawled:
    url: str
    out: Path
    run: subprocess.CompletedProcess[str]
    asked: list[tuple[str, str, bytes]]
    ranges: list[str]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    """The site crawled with ``--browser`` and default flags; the site stopped after."""
    out = tmp_path_factory.mktemp("browser") / "coll"
    with serve_js_site() as site:
        run = harvester(
            "harvest", site.url + "/", "--mode", "crawl", "--browser", "--out", str(out)
        )
        asked, ranges = list(site.asked), list(site.ranges)
    yield Crawled(site.url, out, run, asked, ranges)


def test_the_plain_crawl_and_wget_archive_only_the_start_page(tmp_path: Path) -> None:
    with serve_js_site() as site:
        run = harvester("harvest", site.url + "/", "--mode", "crawl", "--out", str(tmp_path / "c"))
        subprocess.run(
            [
                "wget",
                "-q",
                "-r",
                "-l",
                "inf",
                "-e",
                "robots=off",
                "--delete-after",
                f"--warc-file={tmp_path / 'wget'}",
                "--no-warc-compression",
                site.url + "/",
            ],
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "imported-browser False" in run.stdout  # a plain crawl never imports the browser
    assert set(paths(tmp_path / "c")) == {"/"}
    with open(tmp_path / "wget.warc", "rb") as fh:
        got = {
            urlsplit(r.rec_headers.get_header("WARC-Target-URI")).path
            for r in ArchiveIterator(fh)
            if r.rec_type == "response"
        }
    assert got - {"/robots.txt"} == {"/"}


def test_the_browser_crawl_archives_everything_the_pages_load(crawled: Crawled) -> None:
    run = crawled.run
    # /no-answer never answered: recorded as failed, the crawl went on (exit code 3, partial)
    assert run.returncode == 3, run.stderr[-3000:]
    assert "imported-browser True" in run.stdout
    got = paths(crawled.out)
    assert set(got) >= EVERYTHING, EVERYTHING - set(got)
    assert "/no-answer" not in got and "/never-ends.png" not in got
    # every subresource archived once in the crawl, however many pages loaded it
    assert got["/favicon.ico"] == 1 and max(got.values()) == 1
    posted = [
        body
        for t, h, body in records(crawled.out)
        if t == "request" and h["WARC-Target-URI"].endswith("/api/submit")
    ]
    assert posted == [b'{"q":"cooperative"}']
    assert ("POST", "/api/submit", b'{"q":"cooperative"}') in crawled.asked
    state = sqlite_failed(crawled.out)
    assert state == [crawled.url + "/no-answer"]


def test_a_body_the_browser_decoded_is_stored_with_a_head_that_says_so(crawled: Crawled) -> None:
    found = [(h, b) for uri, h, b in responses(crawled.out) if uri == crawled.url + "/style.css"]
    ((head, body),) = found
    assert body == b"body { background: url(/bg.png) }"  # as the browser decoded it
    assert head.get_header("Content-Encoding") is None
    assert head.get_header("Content-Length") == str(len(body))
    assert head.get_header("X-Archive-Orig-Content-Encoding") == "gzip"


def test_every_file_passes_fastwarc_and_the_warc_rules(crawled: Crawled) -> None:
    # among them: each record of what the browser loaded names the address it came from
    for path in sorted((crawled.out / "warcs").glob("*.warc.gz")):
        assert fastwarc_check(path) == [], path
        assert broken_rules(path) == [], path


def responses(out: Path) -> list[tuple[str, StatusAndHeaders, bytes]]:
    """(URI, HTTP head, payload as stored) of every response record of the collection."""
    return [
        (r.rec_headers.get_header("WARC-Target-URI"), r.http_headers, r.raw_stream.read())
        for r in warc_records(out)
        if r.rec_type == "response"
    ]


def texts(out: Path) -> dict[str, bytes]:
    """The rendered text of each page, by its URL."""
    return {
        h["WARC-Target-URI"].removeprefix("urn:text:"): body
        for t, h, body in records(out)
        if t == "resource" and h["WARC-Target-URI"].startswith("urn:text:")
    }


def test_a_sound_the_page_got_in_ranges_is_archived_whole_as_a_200(crawled: Crawled) -> None:
    assert crawled.ranges  # Chromium asked for parts of it, answered 206
    stored = responses(crawled.out)
    ((head, body),) = [(h, b) for uri, h, b in stored if uri == crawled.url + "/media/tone.wav"]
    assert head.get_statuscode() == "200" and body == TONE
    assert [uri for uri, h, _ in stored if h.get_statuscode() == "206"] == []
    for uri, head, body in stored:  # no body whose length disagrees with its head
        declared = head.get_header("Content-Length")
        assert declared is None or int(declared) == len(body), uri


def test_an_event_stream_is_left_to_the_page_and_not_stored(crawled: Crawled) -> None:
    assert ("GET", "/api/events", b"") in crawled.asked
    assert "/api/events" not in paths(crawled.out)
    assert b"An event streamed" in texts(crawled.out)[crawled.url + "/events"]


def test_a_page_holding_an_event_stream_open_is_done_long_before_its_time_limit() -> None:
    limits = PageLimits(seconds=30.0)

    async def run(url: str) -> tuple[bool, str, float]:
        b = Browser(CHROMIUM, 1, limits, max_rss=1 << 40)
        await b.start()
        try:
            started = time.monotonic()
            page = await b.load(url + "/events")
            return page.complete, page.text, time.monotonic() - started
        finally:
            await b.close()

    with serve_js_site() as site:
        complete, text, took = asyncio.run(run(site.url))
    assert complete and "An event streamed" in text
    assert took < limits.seconds / 3  # the stream never ends: the page did not wait for it


def test_a_service_worker_is_bypassed_so_what_it_serves_is_archived(crawled: Crawled) -> None:
    # asked by the worker as it installed (for its cache), and by the page past the worker
    assert crawled.asked.count(("GET", "/worker/data.json", b"")) == 2
    assert paths(crawled.out)["/worker/data.json"] == 1
    assert b"Data the worker keeps" in texts(crawled.out)[crawled.url + "/worker/"]


def sqlite_failed(out: Path) -> list[str]:
    with sqlite3.connect(out / "state.sqlite") as db:
        return [url for (url,) in db.execute("SELECT url FROM resources WHERE status='failed'")]


def test_each_page_has_its_screenshot_text_and_didl(crawled: Crawled) -> None:
    recs = records(crawled.out)
    resources = {h["WARC-Target-URI"]: body for t, h, body in recs if t == "resource"}
    for page in PAGES:
        url = crawled.url + page
        assert resources[f"urn:view:{url}"].startswith(b"\x89PNG\r\n\x1a\n"), page
        assert f"urn:text:{url}" in resources, page
    assert b"Content fetched by a script" in resources[f"urn:text:{crawled.url}/"]
    assert b"Deep text a, fetched" in resources[f"urn:text:{crawled.url}/deep/a"]
    ids = {h["WARC-Target-URI"]: h["WARC-Record-ID"][1:-1] for t, h, _ in recs
           if t in ("response", "resource")}  # fmt: skip
    didls = {}
    for t, _, body in recs:
        if t == "metadata" and b"<didl:Component>\n      <didl:Resource" in body:
            doc = assert_valid(body)  # the DIDL schema
            refs = [r.get("ref") for r in doc.iter("{urn:mpeg:mpeg21:2002:02-DIDL-NS}Resource")]
            didls[doc.findtext(".//{*}Identifier")] = refs
    start = didls[crawled.url + "/"]  # the page's DIDL lists every record it is made of
    assert start[0] == ids[crawled.url + "/"]
    for part in ("/api/nav.json", "/lazy.png", "/style.css", "/bg.png"):
        assert ids[crawled.url + part] in start, part
    assert ids[f"urn:view:{crawled.url}/"] in start and ids[f"urn:text:{crawled.url}/"] in start
    # the favicon every page loads is archived once, and listed by each page that loaded it
    assert sum(ids[crawled.url + "/favicon.ico"] in refs for refs in didls.values()) > 1


def test_the_wacz_pages_carry_the_rendered_text(crawled: Crawled, tmp_path: Path) -> None:
    wacz = tmp_path / "c.wacz"
    done = harvester("wacz", str(crawled.out), "--to", str(wacz))
    assert done.returncode == 0, done.stderr[-2000:]
    with zipfile.ZipFile(wacz) as zf:
        rows = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]
    texts = {row["url"]: row.get("text") for row in rows}
    valid = subprocess.run(
        [str(Path(sys.executable).parent / "wacz"), "validate", "-f", str(wacz)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert valid.returncode == 0, valid.stdout[-2000:] + valid.stderr[-2000:]
    assert "Content fetched by a script" in texts[crawled.url + "/"]
    assert "urn:text:" not in "".join(texts)


def rendered(url: str, profile: Path) -> str:
    """The DOM Chromium builds for ``url`` once its scripts' requests are answered."""
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("index", ["ours", "pywb"])
def test_the_pages_replay_in_pywb_and_chromium_with_the_site_stopped(
    crawled: Crawled, tmp_path: Path, index: str
) -> None:
    with replay(crawled.out / "warcs", tmp_path / "pywb", index=index) as wayback:
        start = rendered(f"{wayback.server.url}/coll/2999/{crawled.url}/", tmp_path / "p1")
        deep = rendered(f"{wayback.server.url}/coll/2999/{crawled.url}/deep/a", tmp_path / "p2")
        image = wayback.fetch(crawled.url + "/lazy.png")
        sound = wayback.fetch(crawled.url + "/media/tone.wav")
    assert "Content fetched by a script" in start
    assert 'Posted: {"q":"cooperative"}' in start.replace("&quot;", '"')  # the POST's answer
    assert "/section/a" in start and "/endless" in start  # the links its script made
    assert "Deep text a, fetched" in deep
    assert image.status == 200 and image.body.startswith(b"\x89PNG")
    assert sound.status == 200 and sound.body == TONE
