"""The first page of a list, kept until the index changes (server_module.lists.firstpages)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
from lxml import etree
from sickle import Sickle

from server_module.formats import default_registry
from server_module.index.fileindex import FileIndex
from server_module.lists.contentcoding import Kept
from server_module.lists.firstpages import FirstPages, ListStart
from server_module.repository import Repository
from server_module.settings import load_settings
from tests.conftest import OAI, start_provider
from tests.schemas import assert_valid
from tests.sites import Manifest, make_site

BASE = "http://example.org"
T = 1_900_000_000  # the repositories' clock; the index stamps rows with the real one


@pytest.fixture
def site(tmp_path: Path) -> Manifest:
    return make_site(tmp_path / "www", pages=24)


def _repository(site: Manifest, index: FileIndex, clock: list[float]) -> Repository:
    settings = load_settings(docroot=site.root, base_url=BASE, page_size=5)
    return Repository(settings, index, default_registry(), clock=lambda: clock[0])


def _first(repo: Repository, **args: str) -> bytes:
    pairs = [("verb", "ListIdentifiers"), *args.items()]
    return repo.handle(pairs)


LISTS = [
    {"metadataPrefix": "oai_dc"},
    {"metadataPrefix": "http_header"},
    {"metadataPrefix": "oai_dc", "set": "text"},
    {"metadataPrefix": "oai_dc", "set": "image:png"},
    {"metadataPrefix": "oai_dc", "from": "2001-01-01T00:00:00Z"},
    {"metadataPrefix": "oai_dc", "until": "2040-01-01"},
]


@pytest.mark.parametrize("args", LISTS, ids=lambda a: "&".join(f"{k}={v}" for k, v in a.items()))
def test_a_kept_first_page_is_byte_for_byte_the_page_made_on_request(
    site: Manifest, tmp_path: Path, args: dict[str, str]
) -> None:
    with FileIndex(tmp_path / "idx.sqlite", site.root, BASE) as index:
        index.refresh()
        clock = [float(T)]
        kept = _repository(site, index, clock)
        first = _first(kept, **args)
        clock[0] += 3600.0  # another harvester, an hour later: a new responseDate and token
        again = _first(kept, **args)
        made = _first(_repository(site, index, clock), **args)
    assert (kept.firsts.hits, kept.firsts.misses) == (1, 1)
    assert again == made
    assert again != first, "the envelope and the token are made for each request"
    assert_valid(again)


def test_a_list_bounded_before_the_newest_item_is_kept_apart(
    site: Manifest, tmp_path: Path
) -> None:
    """``until`` before some datestamps cuts the list: its page and count are its own."""
    clock = [1_800_000_000.0]
    with FileIndex(tmp_path / "idx.sqlite", site.root, BASE, clock=lambda: clock[0]) as index:
        index.refresh()
        clock[0] += 100.0
        (site.root / "late.txt").write_text("a file indexed later\n")
        index.refresh()
        repo = _repository(site, index, [float(T)])
        every = _first(repo, metadataPrefix="oai_dc")
        early = _first(repo, metadataPrefix="oai_dc", until="2027-01-15T08:00:00Z")
        early_again = _first(repo, metadataPrefix="oai_dc", until="2027-01-15T08:00:00Z")
    assert _size(every) == len(site.public) + 1
    assert _size(early) == len(site.public)
    assert early_again == early
    assert (repo.firsts.hits, repo.firsts.misses) == (1, 2)


def test_adds_and_deletes_are_on_the_next_first_page_and_in_its_count(
    site: Manifest, tmp_path: Path
) -> None:
    # One index second for every refresh: the keyset order of the rows stays put, so the
    # first page shows a deletion in place of the live file it had.
    with FileIndex(
        tmp_path / "idx.sqlite", site.root, BASE, clock=lambda: 1_800_000_000.0
    ) as index:
        index.refresh()
        repo = _repository(site, index, [float(T)])
        before = _first(repo, metadataPrefix="oai_dc")
        victim = _identifiers(before)[0]
        _file(site.root, victim, BASE).unlink()
        (site.root / "new-a.txt").write_text("added\n")
        (site.root / "new-b.txt").write_text("added too\n")
        index.refresh()
        after = _first(repo, metadataPrefix="oai_dc")
        made = _first(_repository(site, index, [float(T)]), metadataPrefix="oai_dc")
    assert after == made
    assert (repo.firsts.hits, repo.firsts.misses) == (0, 2)
    assert _size(before) == len(site.public)
    assert _size(after) == len(site.public) + 2, "the deletion stays in the list (persistent)"
    assert _deleted(before) == set() and _deleted(after) == {victim}


def test_a_served_provider_counts_and_lists_what_changed_between_two_harvests(
    tmp_path: Path,
) -> None:
    """Over loopback with an independent client (sickle): the second harvest's first page
    comes after a refresh in another process, which the kept page must not hide."""
    site = make_site(tmp_path / "www", pages=30)
    index = tmp_path / "idx.sqlite"
    with start_provider(site.root, index, page_size=7) as server:
        url = server.url + "/oai"
        first = _harvest(url)
        assert set(first.values()) == {False} and len(first) == len(site.public)
        gone = sorted(first)[0]
        _file(site.root, gone, server.url).unlink()
        (site.root / "new.txt").write_text("added between the harvests\n")
        with FileIndex(index, site.root, server.url) as idx:
            idx.refresh()
        time.sleep(1.1)  # the second list starts in a later second than the refresh
        second = _harvest(url)
        size = _list_size(url)
    assert len(second) == size == len(site.public) + 1
    assert second[gone] is True
    assert second[server.url + "/new.txt"] is False
    assert {k for k, deleted in second.items() if deleted} == {gone}


def test_the_kept_pages_are_bounded_in_number_and_size() -> None:
    pages = FirstPages(max_pages=2, max_bytes=10)
    start = ListStart(total=1, items=Kept(b"xyz"), count=1, last=(0, "a"), more=False)
    for key in ("a", "b", "c"):
        pages.put(key, 0, start)
    assert len(pages) == 2 and pages.get("a", 0) is None, "the least recently used goes"
    assert pages.get("b", 0) is start and pages.get("b", 0) is start, "kept for every request"
    pages.put(
        "d", 0, ListStart(total=1, items=Kept(b"0123456"), count=1, last=(0, "d"), more=False)
    )
    assert pages.get("c", 0) is None, "3 + 7 bytes would pass 10"
    assert pages.get("b", 0) is start
    pages.put(
        "big", 0, ListStart(total=1, items=Kept(b"x" * 11), count=1, last=(0, "e"), more=False)
    )
    assert pages.get("big", 0) is None, "larger than all the room there is"
    assert pages.get("b", 1) is None, "made from another generation of the index"
    assert pages.get("b", 0) is None, "and dropped then"


def _file(root: Path, identifier: str, base: str) -> Path:
    return root / os.fsdecode(unquote_to_bytes(identifier.removeprefix(base + "/")))


def _harvest(url: str) -> dict[str, bool]:
    return {h.identifier: h.deleted for h in Sickle(url).ListIdentifiers(metadataPrefix="oai_dc")}


def _list_size(url: str) -> int:
    response = Sickle(url).harvest(verb="ListIdentifiers", metadataPrefix="oai_dc")
    token = response.xml.find(f".//{OAI}resumptionToken")
    assert token is not None
    return int(token.get("completeListSize", "-1"))


def _size(body: bytes) -> int:
    token = assert_valid(body).find(f".//{OAI}resumptionToken")
    assert token is not None
    return int(token.get("completeListSize", "-1"))


def _identifiers(body: bytes) -> list[str]:
    return [h.text or "" for h in etree.fromstring(body).iter(f"{OAI}identifier")]


def _deleted(body: bytes) -> set[str]:
    headers = assert_valid(body).iter(f"{OAI}header")
    return {h.findtext(f"{OAI}identifier") or "" for h in headers if h.get("status") == "deleted"}
