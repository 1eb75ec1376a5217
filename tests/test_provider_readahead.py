"""List pages made ahead (server_module.lists.pagecache): served when asked for, and never stale."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from flask import Flask
from lxml import etree

from server_module.app import create_app
from server_module.formats import default_registry
from server_module.index.fileindex import FileIndex
from server_module.lists.pagecache import Page, PageCache
from server_module.repository import Repository
from server_module.settings import load_settings
from tests.conftest import OAI
from tests.schemas import assert_valid
from tests.sites import Manifest, make_site

BASE = "http://example.org"


@pytest.fixture
def site(tmp_path: Path) -> Manifest:
    return make_site(tmp_path / "www", pages=24)


def _app(site: Manifest, index: Path, read_ahead: bool = True) -> Flask:
    return create_app(
        site.root, BASE, index_path=index, page_size=5, refresh_interval=0, read_ahead=read_ahead
    )


def _walk(app: Flask) -> Iterator[etree._Element]:
    """Every page of a list through the WSGI app, each response closed as a server would."""
    client = app.test_client()
    params = {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"}
    while True:
        response = client.get("/oai", query_string=params)
        root = assert_valid(response.data)
        response.close()  # what runs the read-ahead, after the body is sent
        yield root
        token = root.findtext(f".//{OAI}resumptionToken")
        if not token:
            return
        params = {"verb": "ListIdentifiers", "resumptionToken": token}


def _identifiers(pages: Iterator[etree._Element]) -> list[str]:
    return [h.text or "" for page in pages for h in page.iter(f"{OAI}identifier")]


def test_every_page_after_the_first_is_served_from_the_read_ahead(
    site: Manifest, tmp_path: Path
) -> None:
    app = _app(site, tmp_path / "idx.sqlite")
    repo: Repository = app.extensions["oai_repository"]
    seen = _identifiers(_walk(app))
    assert sorted(seen) == sorted(f"{BASE}/{quote(os.fsencode(p), safe='/')}" for p in site.public)
    pages = -(-len(seen) // 5)
    assert pages > 3
    assert (repo.pages.hits, repo.pages.misses) == (pages - 1, 0)
    assert len(repo.pages) == 0, "a served page is not kept twice"


def test_no_read_ahead_keeps_nothing(site: Manifest, tmp_path: Path) -> None:
    app = _app(site, tmp_path / "idx.sqlite", read_ahead=False)
    repo: Repository = app.extensions["oai_repository"]
    seen = _identifiers(_walk(app))
    assert len(seen) == len(site.public)
    assert (repo.pages.hits, len(repo.pages)) == (0, 0)
    assert repo.pages.misses == -(-len(seen) // 5) - 1


def _repository(site: Manifest, index: FileIndex, clock: float) -> Repository:
    settings = load_settings(docroot=site.root, base_url=BASE, page_size=5, records_page_size=4)
    return Repository(settings, index, default_registry(), clock=lambda: clock)


def _pages(repo: Repository, verb: str, prefix: str, ahead: bool) -> list[bytes]:
    bodies = []
    pairs = [("verb", verb), ("metadataPrefix", prefix)]
    while True:
        parts, follow = repo.respond(pairs)
        bodies.append(b"".join(parts))
        if follow is None:
            return bodies
        if ahead:
            repo.read_ahead(*follow)
        pairs = [("verb", follow[0]), ("resumptionToken", follow[1])]


@pytest.mark.parametrize(
    ("verb", "prefix"),
    [("ListIdentifiers", "oai_dc"), ("ListRecords", "oai_dc"), ("ListRecords", "oai_didl")],
)
def test_a_page_made_ahead_is_byte_for_byte_the_page_made_on_request(
    site: Manifest, tmp_path: Path, verb: str, prefix: str
) -> None:
    with FileIndex(tmp_path / "idx.sqlite", site.root, BASE) as index:
        index.refresh()
        ahead = _repository(site, index, 1_900_000_000.0)
        plain = _repository(site, index, 1_900_000_000.0)
        made_ahead = _pages(ahead, verb, prefix, ahead=True)
        made_now = _pages(plain, verb, prefix, ahead=False)
    assert len(made_ahead) > 3
    assert made_ahead == made_now
    assert ahead.pages.hits == len(made_ahead) - 1
    assert plain.pages.hits == 0


def test_a_refresh_after_the_read_ahead_is_not_hidden_by_it(site: Manifest, tmp_path: Path) -> None:
    # One index second for both refreshes: the victim keeps its place in the keyset order
    # (a deletion stamped a second later would move it to the end of the list, off page 2).
    with FileIndex(
        tmp_path / "idx.sqlite", site.root, BASE, clock=lambda: 1_800_000_000.0
    ) as index:
        index.refresh()
        repo = _repository(site, index, 1_900_000_000.0)
        _, follow = repo.respond([("verb", "ListIdentifiers"), ("metadataPrefix", "oai_dc")])
        assert follow is not None
        repo.read_ahead(*follow)
        assert len(repo.pages) == 1
        second = [("verb", follow[0]), ("resumptionToken", follow[1])]
        # What the kept page says, made again by a repository with nothing kept:
        before = _repository(site, index, 1_900_000_000.0).handle(second)
        victim = _identifiers(iter([etree.fromstring(before)]))[0]
        (site.root / unquote(victim.removeprefix(BASE + "/"))).unlink()
        index.refresh()
        after = repo.handle(second)
    assert (repo.pages.hits, repo.pages.misses) == (0, 1)
    # The list is bounded at a later T than the refresh, so the victim is still on the page,
    # now as a deletion; the page made ahead had it as a live file.
    assert _deleted(before) == set()
    assert _deleted(after) == {victim}


def _deleted(body: bytes) -> set[str]:
    headers = assert_valid(body).iter(f"{OAI}header")
    return {h.findtext(f"{OAI}identifier") or "" for h in headers if h.get("status") == "deleted"}


def test_the_cache_is_bounded_in_pages_bytes_and_time() -> None:
    now = [0.0]
    cache = PageCache(max_pages=2, max_bytes=10, ttl_s=60.0, clock=lambda: now[0])
    for token in "abc":
        cache.put("ListIdentifiers", token, 0, Page(["xyz"], "next"))
    assert len(cache) == 2 and cache.get("ListIdentifiers", "a", 0) is None  # oldest evicted
    cache.put("ListIdentifiers", "d", 0, Page("0123456"))  # 3 + 7 bytes > 10 - 3
    assert cache.get("ListIdentifiers", "b", 0) is None
    assert cache.get("ListIdentifiers", "c", 0) is not None
    cache.put("ListIdentifiers", "big", 0, Page("x" * 11))
    assert cache.get("ListIdentifiers", "big", 0) is None, "larger than the whole cache"
    cache.put("ListIdentifiers", "e", 0, Page("e"))
    now[0] = 61.0
    assert cache.get("ListIdentifiers", "e", 0) is None, "older than the TTL"
    cache.put("ListIdentifiers", "f", 0, Page("f"))
    assert cache.get("ListRecords", "f", 0) is None, "the verb is part of the key"
    assert cache.get("ListIdentifiers", "f", 1) is None, "made from an older index"
