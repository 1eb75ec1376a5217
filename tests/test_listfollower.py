"""Fetching while a slow list is read (harvester/listed/follower.py), against a provider that
holds its list pages (or not) and logs every request it answers."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from harvester.cli import main
from harvester.listed import follower as listfollower
from harvester.listed.fetchstep import ListedFetch
from harvester.listed.follower import SLOW_LIST_S, ListFollower
from harvester.storage.sqlite.state import SQLiteState
from harvester.summary import Summary
from tests.servers import RunningServer, start_wsgi
from tests.sites import Manifest, make_site
from tests.test_fetchshards import assert_archived_once, run


@contextmanager
def holding_provider(site: Manifest, tmp_path: Path, **settings: Any) -> Iterator[RunningServer]:
    """The provider, each list page held 0.15 s, each file 0.01 s: a list of 7 pages."""
    kwargs = {"docroot": str(site.root), "base_url": "http://{host}:{port}", "page_size": 10}
    kwargs |= {"index_path": str(tmp_path / "index.sqlite"), "refresh_interval": 0}
    kwargs |= {"hold": 0.01, "list_hold": 0.15, **settings}
    with start_wsgi(
        "tests.counting_provider:create_app", kwargs, ready_path="/_requests"
    ) as server:
        yield server


def answered(server: RunningServer, what: str) -> Any:
    with urllib.request.urlopen(f"{server.url}/_{what}", timeout=10) as response:
        return json.loads(response.read())


def lists_and_files(server: RunningServer) -> tuple[list[list[Any]], list[list[Any]]]:
    """The provider's log of list requests and of file requests, each ``[start, end, path,
    query]``."""
    log = answered(server, "requests")
    lists = [r for r in log if r[2] == "/oai" and "verb=List" in r[3]]
    files = [r for r in log if r[2] not in ("/oai", "/robots.txt", "/")]  # "/": the seed
    return lists, files


def test_files_are_fetched_while_the_list_is_read(tmp_path: Path) -> None:
    """With ``--per-host 3`` the list has one connection and the follower two: files are
    fetched between list pages (a quarter at least, even on a loaded machine; most, on a
    quiet one), never more than three requests at once, each file once."""
    site = make_site(tmp_path / "www", pages=60, seed=31)
    with holding_provider(site, tmp_path) as server:
        out = tmp_path / "out"
        code, summary, err = run(server, out, "--per-host", "3")
        assert (code, err) == (0, "")
        assert summary["fetched"] == summary["listed"] == len(site.public)
        lists, files = lists_and_files(server)
        assert len(lists) >= 6
        list_end = max(r[1] for r in lists)
        early = [r for r in files if r[0] < list_end]  # none without the follower
        assert len(early) >= len(site.public) // 4, "files leave before the list's end"
        assert len(files) == len(site.public)
        assert 2 <= answered(server, "most_in_flight") <= 3
        assert_archived_once(out, server, site)
        again = run(server, out)
        assert again[0] == 0 and again[1]["fetched"] == again[1]["unchanged"] == 0


def test_one_connection_a_host_is_never_shared_with_the_list(tmp_path: Path) -> None:
    """``--per-host 1``: the list's connection is the only one; files wait for its end."""
    site = make_site(tmp_path / "www", pages=30, seed=32)
    with holding_provider(site, tmp_path) as server:
        code, summary, _err = run(server, tmp_path / "out", "--per-host", "1")
        assert code == 0 and summary["fetched"] == len(site.public)
        lists, files = lists_and_files(server)
        assert min(r[0] for r in files) > max(r[1] for r in lists)
        assert answered(server, "most_in_flight") == 1


def test_only_a_slow_page_starts_the_follower() -> None:
    """Pages that arrived under ``SLOW_LIST_S`` a URL start nothing (a list from loopback
    takes a twentieth of it), judged against the largest page so far; the first slower page
    makes the fetch and starts the thread."""
    made: list[int] = []

    def make_fetch() -> ListedFetch:
        made.append(len(made))
        raise LookupError("the fetch step was made")

    follower = ListFollower(make_fetch, Summary())
    urls = [f"http://127.0.0.1:9/{n}" for n in range(100)]
    follower.follow(urls, 0.9 * SLOW_LIST_S * len(urls))
    follower.follow([], 1.0)
    follower.follow(urls[:4], 0.9 * SLOW_LIST_S * len(urls))  # short, but no slower a page
    assert made == []
    with pytest.raises(LookupError):
        follower.follow(urls, 1.1 * SLOW_LIST_S * len(urls))
    assert made == [0]
    follower.close()


def test_didl_is_not_followed(tmp_path: Path) -> None:
    """Strategy ``didl`` (its pages carry most files) fetches the files given by reference
    after the list, however slow; the ones its pages carried are never asked for."""
    site = make_site(tmp_path / "www", pages=60, seed=33)
    settings = {"records_page_size": 10, "inline_max": 700}
    with holding_provider(site, tmp_path, **settings) as server:
        out = tmp_path / "out"
        code, summary, err = run(server, out, "--oai-strategy", "didl")
        assert (code, err) == (0, "")
        assert summary["fetched"] == len(site.public) and summary["coverage"] == 1.0
        large = {p for p in site.public if (site.root / p).stat().st_size > 700}
        assert 10 < len(large) < len(site.public) - 10, "some files carried, some fetched"
        lists, files = lists_and_files(server)
        assert len(files) == len(large), "a carried file is never fetched again"
        assert min(r[0] for r in files) > max(r[1] for r in lists)
        assert_archived_once(out, server, site, kinds=("response", "resource"))


def test_a_failing_follower_fails_the_run_and_the_rerun_finishes(tmp_path: Path) -> None:
    """The thread's disk error stops the list and ends the run in one line; what it did not
    archive is archived by the next run."""
    site = make_site(tmp_path / "www", pages=60, seed=34)
    with holding_provider(site, tmp_path, list_hold=0.3) as server:  # time to fail in
        out = tmp_path / "out"
        failing = ("tests.killed_harvester", "follower:fail")
        code, summary, err = run(server, out, program=failing)
        assert code == 1 and summary == {}
        assert err == "harvester: cannot write /full/disk.warc.gz: No space left on device\n"
        lists, _files = lists_and_files(server)
        assert len(lists) < 6, "the list stopped at its next page"
        code, summary, err = run(server, out)
        assert (code, err) == (0, "")
        assert summary["coverage"] == 1.0
        assert_archived_once(out, server, site)


def test_a_harvest_killed_while_following_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL right after the follower's 5th group reached its file, before the commit
    that marks it: the rerun repairs, reconciles and archives each file once."""
    site = make_site(tmp_path / "www", pages=60, seed=35)
    with holding_provider(site, tmp_path, list_hold=0.3) as server:  # time to be killed in
        out = tmp_path / "out"
        argv = [sys.executable, "-m", "tests.killed_harvester", "follower:5", "harvest"]
        argv += [server.url, "--out", str(out), "--quiet"]
        assert subprocess.run(argv, timeout=120).returncode == -9
        assert any(p.name.endswith(".open") for p in (out / "warcs").iterdir())
        code, summary, err = run(server, out)
        assert code == 0 and "repaired" in err
        assert summary["coverage"] == 1.0
        assert_archived_once(out, server, site)


def test_urls_beyond_the_queue_are_left_to_the_fetch_after_the_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list far ahead of the follower does not grow its queue: with room for 4 URLs, at
    most 4 of each 10-URL page leave early, and the fetch after the list archives the rest."""
    monkeypatch.setattr(listfollower, "_QUEUED_MAX", 4)
    site = make_site(tmp_path / "www", pages=60, seed=36)
    with holding_provider(site, tmp_path) as server:
        out = tmp_path / "out"
        assert main(["harvest", server.url, "--out", str(out), "--quiet", "--per-host", "3"]) == 0
        lists, files = lists_and_files(server)
        list_end = max(r[1] for r in lists)
        early = [r for r in files if r[0] < list_end]
        assert 0 < len(early) <= 4 * len(lists)
        assert len(files) == len(site.public)
        assert_archived_once(out, server, site)


def test_a_file_the_follower_failed_waits_for_its_retry_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 404 met by the follower is not asked for again by the fetch after the list, even
    with no wait before a retry: a run's failures are retried by later runs."""
    site = make_site(tmp_path / "www", pages=60, seed=38)
    gone = sorted(site.public - {"index.html"})[0]
    monkeypatch.setenv("HARVESTER_RETRY_DELAY", "0")
    with holding_provider(site, tmp_path) as server:
        (site.root / gone).unlink()  # listed (indexed at the start), then 404
        out = tmp_path / "out"
        assert main(["harvest", server.url, "--out", str(out), "--quiet"]) == 3  # partial
        _lists, files = lists_and_files(server)
        asked = [r for r in files if r[2] == "/" + gone]
        assert len(asked) == 1, asked
        with SQLiteState(out / "state.sqlite") as state:
            res = state.get(f"{server.url}/{quote(gone)}")
        assert res is not None and res.status == "failed" and res.attempts == 1
