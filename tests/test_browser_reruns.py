"""A browser crawl run again into the same collection (``tests/js_site.py`` unchanged, default
flags, as the README shows it): everything the pages load, documents and subresources alike,
is written again as a ``revisit`` of its first capture, each page's DIDL record lists those
revisits, the files pass FastWARC and the WARC rules, and pywb replays the second state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.js_site import TONE, serve_js_site
from tests.pywb import replay
from tests.schemas import assert_valid
from tests.test_browser_capture import EVERYTHING, harvester, rendered
from tests.warcrules import broken_rules, fastwarc_check

POSTED = "/api/submit"  # a POST's answer is archived whole on every run


@dataclass
class Rerun:
    url: str
    out: Path
    first: list[Path]  # the first run's WARC files
    second: list[Path]  # the second run's


def kinds(paths: list[Path]) -> dict[str, Counter[str]]:
    """By WARC-Type, how many records of each path (and query) ``paths`` hold."""
    found: dict[str, Counter[str]] = {}
    for path in paths:
        with open(path, "rb") as fh:
            for r in ArchiveIterator(fh):
                uri = r.rec_headers.get_header("WARC-Target-URI") or ""
                if uri.startswith("http"):
                    parts = urlsplit(uri)
                    where = parts.path + (f"?{parts.query}" if parts.query else "")
                    found.setdefault(r.rec_type, Counter())[where] += 1
    return found


@pytest.fixture(scope="module")
def rerun(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rerun]:
    out = tmp_path_factory.mktemp("rerun") / "coll"
    argv = ["harvest", "", "--mode", "crawl", "--browser", "--out", str(out)]
    with serve_js_site() as site:
        argv[1] = site.url + "/"
        first = harvester(*argv)
        assert first.returncode == 3, first.stderr[-3000:]  # /no-answer failed
        before = sorted((out / "warcs").glob("*.warc.gz"))
        second = harvester(*argv)
        assert second.returncode == 3, second.stderr[-3000:]
    after = sorted((out / "warcs").glob("*.warc.gz"))
    yield Rerun(site.url, out, before, [p for p in after if p not in before])


def test_a_rerun_writes_revisits_for_everything_unchanged(rerun: Rerun) -> None:
    first, second = kinds(rerun.first), kinds(rerun.second)
    assert set(first["response"]) >= EVERYTHING
    # the second run wrote no response for a URL the first archived, but the POST's answer
    assert set(second["response"]) & set(first["response"]) == {POSTED}
    assert set(second["revisit"]) >= EVERYTHING - {POSTED}, EVERYTHING - set(second["revisit"])
    assert max(second["revisit"].values()) == 1  # and each once
    for path in rerun.second:
        assert fastwarc_check(path) == [], path
        assert broken_rules(path) == [], path


def test_the_rerun_s_page_lists_its_revisits_in_its_didl(rerun: Rerun) -> None:
    revisits, didls = {}, []
    for path in rerun.second:
        with open(path, "rb") as fh:
            for r in ArchiveIterator(fh):
                head = r.rec_headers
                if r.rec_type == "revisit":
                    revisits[head.get_header("WARC-Target-URI")] = head["WARC-Record-ID"][1:-1]
                elif r.rec_type == "metadata" and b"<didl:Resource" in (
                    body := r.content_stream().read()
                ):
                    didls.append(assert_valid(body))  # the DIDL schema
    lists = [  # the start page's: its capture's DIDL record, and its page's
        [r.get("ref") for r in doc.iter("{urn:mpeg:mpeg21:2002:02-DIDL-NS}Resource")]
        for doc in didls
        if doc.findtext(".//{*}Identifier") == rerun.url + "/"
    ]
    refs = max(lists, key=len)  # the page's, listing every record it is made of
    assert refs[0] == revisits[rerun.url + "/"]
    for part in ("/api/nav.json", "/api/content.json", "/style.css", "/bg.png", "/lazy.png"):
        assert revisits[rerun.url + part] in refs, part


def test_the_collection_replays_after_the_rerun(rerun: Rerun, tmp_path: Path) -> None:
    with replay(rerun.out / "warcs", tmp_path / "pywb") as wayback:
        start = rendered(f"{wayback.server.url}/coll/2999/{rerun.url}/", tmp_path / "p1")
        deep = rendered(f"{wayback.server.url}/coll/2999/{rerun.url}/deep/a", tmp_path / "p2")
        nav = wayback.cdx(rerun.url + "/api/nav.json")
        image = wayback.fetch(rerun.url + "/lazy.png")
        sound = wayback.fetch(rerun.url + "/media/tone.wav")
    assert len(nav) == 2 and "warc/revisit" in nav[-1]  # the latest capture is the revisit
    assert "Content fetched by a script" in start
    assert "/section/a" in start and "/worker/" in start  # the links its script made
    assert "Deep text a, fetched" in deep
    assert image.status == 200 and image.body.startswith(b"\x89PNG")
    assert sound.status == 200 and sound.body == TONE
