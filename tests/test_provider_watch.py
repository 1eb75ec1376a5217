"""The provider watches its document root (issue 12, #15): a change is listed within seconds,
not at the next ``refresh_interval``; and the watch stops with its refresher."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sickle import Sickle
from sickle.oaiexceptions import NoRecordsMatch

from server_module.index.fileindex import FileIndex
from server_module.index.refresher import Refresher
from tests.conftest import start_provider
from tests.servers import start_command
from tests.sites import make_site

WAIT_S = 10.0
LONG_INTERVAL = 3600.0


def _listed(endpoint: str) -> dict[str, bool]:
    try:
        headers = Sickle(endpoint).ListIdentifiers(metadataPrefix="oai_dc")
        return {h.identifier: h.deleted for h in headers}
    except NoRecordsMatch:
        return {}


def _within(seconds: float, check: Callable[[], bool]) -> float:
    """How long until ``check()`` held, polling; fails after ``seconds``."""
    started = time.monotonic()
    for _ in range(int(seconds / 0.1)):
        if check():
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"not seen within {seconds}s")


def _indexed(index: FileIndex, name: str) -> bool:
    with index.snapshot() as snap:
        return snap.get(f"http://example.org/{name}") is not None


def test_a_new_file_and_a_deletion_are_listed_within_seconds(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=8)
    with start_provider(
        site.root, tmp_path / "idx.sqlite", refresh_interval=LONG_INTERVAL
    ) as server:
        endpoint, new = server.url + "/oai", site.root / "docs" / "fresh.html"
        identifier = f"{server.url}/docs/fresh.html"
        assert identifier not in _listed(endpoint)
        new.parent.mkdir(exist_ok=True)
        new.write_text("<title>fresh</title>\n")
        _within(WAIT_S, lambda: _listed(endpoint).get(identifier) is False)
        new.unlink()
        _within(WAIT_S, lambda: _listed(endpoint).get(identifier) is True)


def test_each_gunicorn_worker_watches(tmp_path: Path) -> None:
    """Under ``oai-provider serve`` (two forked workers), every worker sees a change soon."""
    site = make_site(tmp_path / "www", pages=4)
    argv = [sys.executable, "-m", "server_module.cli", "serve", str(site.root), "--port", "{port}",
            "--index", str(tmp_path / "idx.sqlite"), "--workers", "2", "--threads", "1",
            "--refresh-interval", str(LONG_INTERVAL)]  # fmt: skip
    with start_command(argv, ready_path="/oai?verb=Identify") as server:
        endpoint = server.url + "/oai"
        (site.root / "served.txt").write_text("new under gunicorn\n")
        identifier = f"{server.url}/served.txt"
        _within(WAIT_S, lambda: _listed(endpoint).get(identifier) is False)
        # Later requests reach either worker: each lists the file.
        assert all(_listed(endpoint).get(identifier) is False for _ in range(6))


def test_no_watch_keeps_to_the_interval(tmp_path: Path) -> None:
    """The same change in two sites, one watched: once the watched provider lists it (as
    long as a watched change takes to be listed, on this machine now), the other does not."""
    site, control = make_site(tmp_path / "www", pages=4), make_site(tmp_path / "ctl", pages=4)
    with (
        start_provider(
            site.root, tmp_path / "idx.sqlite", refresh_interval=LONG_INTERVAL, watch=False
        ) as server,
        start_provider(
            control.root, tmp_path / "ctl.sqlite", refresh_interval=LONG_INTERVAL
        ) as watched,
    ):
        (site.root / "late.txt").write_text("not watched\n")
        (control.root / "late.txt").write_text("watched\n")
        _within(WAIT_S, lambda: f"{watched.url}/late.txt" in _listed(watched.url + "/oai"))
        assert f"{server.url}/late.txt" not in _listed(server.url + "/oai")


def test_a_burst_is_one_refresh_and_the_watch_stops_with_the_refresher(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=4)
    before = set(threading.enumerate())
    with FileIndex(tmp_path / "idx.sqlite", site.root, "http://example.org") as index:
        index.refresh()
        refreshes: list[int] = []
        plain = index.refresh

        def counted(blocking: bool = True, **how: Any) -> object:
            refreshes.append(1)
            return plain(blocking, **how)

        index.refresh = counted  # type: ignore[method-assign]
        refresher = Refresher(index, LONG_INTERVAL, watch=True)
        refresher.open()
        try:
            _within(WAIT_S, lambda: len(refreshes) == 1)  # the one a new watch starts with
            for i in range(20):
                (site.root / f"burst{i}.txt").write_text(f"{i}\n")
            _within(WAIT_S, lambda: len(refreshes) == 2)
            # A change after the burst makes the next refresh: the burst made no other.
            (site.root / "after.txt").write_text("after the burst\n")
            _within(WAIT_S, lambda: len(refreshes) >= 3 and _indexed(index, "after.txt"))
            assert len(refreshes) == 3, "a burst of changes made more than one refresh"
            assert _indexed(index, "burst19.txt")
        finally:
            refresher.close()
    assert set(threading.enumerate()) - before == set()
