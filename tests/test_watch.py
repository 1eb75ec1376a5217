"""``harvester watch`` against a live loopback site whose pages change: revisits, signals,
SIGKILL and restart."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from tests.conftest import start_provider
from tests.servers import RunningServer, start_wsgi
from tests.sites import make_site

RATES = [2.0, 0.0, 0.0, 0.0]  # p0 changes about twice a second, the others never


@pytest.fixture
def site(tmp_path: Path) -> tuple[RunningServer, Path]:
    log = tmp_path / "handed-out.log"
    server = start_wsgi(
        "tests.changing_site:changing_site", {"rates": RATES, "seed": 3, "log": str(log)}
    )
    yield server, log
    server.stop()


def watch(url: str, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "harvester.cli", "watch", url + "/", "--out", str(out)]
    argv += ["--rate", "20", "--min-interval", "0.2", "--quiet", "--json", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def records(out: Path) -> Counter[tuple[str, str]]:
    """(WARC-Type, path) counts over every WARC file of the collection."""
    seen: Counter[tuple[str, str]] = Counter()
    for path in sorted(out.glob("*/warcs/*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                seen[(record.rec_type, "/" + uri.split("/", 3)[-1])] += 1
    return seen


def bodies(out: Path) -> set[tuple[str, int]]:
    """(path, version) of every response body archived."""
    found = set()
    for path in sorted(out.glob("*/warcs/*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    text = record.content_stream().read().decode()
                    if " version " in text:
                        words = text.split("<body>")[1].split()
                        found.add((words[0], int(words[2].split("<")[0])))
    return found


def learned(out: Path) -> int:
    (state,) = out.glob("*/state.sqlite")
    with sqlite3.connect(state) as db:
        return int(db.execute("SELECT SUM(visits) FROM revisits").fetchone()[0] or 0)


def wait_until_learned(out: Path, timeout: float = 30.0) -> None:
    """Until the watch has recorded a revisit (or ``timeout`` seconds have passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ValueError, sqlite3.Error):  # no state yet, or being made
            if learned(out) > 0:
                return
        time.sleep(0.1)


def test_watch_revisits_what_changes_and_records_revisits(
    site: tuple[RunningServer, Path], tmp_path: Path
) -> None:
    server, log = site
    out = tmp_path / "coll"
    proc = watch(server.url, out, "--max-time", "5")
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr.decode()
    summary = json.loads(stdout)
    assert summary["new_urls"] == len(RATES)
    seen = records(out)
    assert seen[("response", "/")] == 1
    assert all(seen[("response", f"/p{i}")] >= 1 for i in range(len(RATES)))
    assert seen[("revisit", "/p1")] >= 1  # unchanged: a revisit record, no new payload
    assert seen[("response", "/p0")] >= 2  # the page that changes is archived again
    handed = {(p, int(v)) for p, v in (line.split() for line in log.read_text().splitlines())}
    assert handed == bodies(out)


def test_sigterm_stops_cleanly_and_a_restart_keeps_what_it_learned(
    site: tuple[RunningServer, Path], tmp_path: Path
) -> None:
    server, _log = site
    out = tmp_path / "coll"
    proc = watch(server.url, out)
    wait_until_learned(out)  # a fixed sleep was too short on a loaded machine
    proc.send_signal(signal.SIGTERM)
    _stdout, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0, stderr.decode()
    before = learned(out)
    assert before > 0
    again = watch(server.url, out, "--max-time", "2")
    stdout, stderr = again.communicate(timeout=30)
    assert again.returncode == 0, stderr.decode()
    assert json.loads(stdout)["new_urls"] == 0  # nothing refetched as new
    assert learned(out) > before


def test_sigkill_loses_nothing(site: tuple[RunningServer, Path], tmp_path: Path) -> None:
    server, log = site
    out = tmp_path / "coll"
    proc = watch(server.url, out)
    time.sleep(3)
    proc.kill()
    proc.communicate(timeout=10)
    again = watch(server.url, out, "--max-time", "1.5")
    _stdout, stderr = again.communicate(timeout=30)
    assert again.returncode == 0, stderr.decode()
    handed = {(p, int(v)) for p, v in (line.split() for line in log.read_text().splitlines())}
    assert handed <= bodies(out)


def responses_of(out: Path, url: str) -> list[bytes]:
    """The bodies of every response record for ``url``, in order; a WARC file still being
    written is read as far as it goes."""
    found = []
    for path in sorted(out.glob("*/warcs/*.warc.gz")):
        failed = (ArchiveLoadFailed, EOFError, OSError, ValueError)
        with contextlib.suppress(*failed), open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response" and uri == url:
                    found.append(record.content_stream().read())
    return found


def wait_for(check: Callable[[], bool], seconds: float) -> float | None:
    """Seconds until ``check()`` held, polled every 0.2 s; None when it never did."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if check():
            return time.monotonic() - start
        time.sleep(0.2)
    return None


CHANGED = b"<html><title>changed while watched</title></html>"


def change_while_watched(
    proc: subprocess.Popen[bytes], site: Path, url: str, out: Path, first: float, within: float
) -> tuple[float | None, bytes, bytes]:
    """Once the watch ``proc`` archived ``url``, the ``index.html`` of the folder ``site`` (in
    ``first`` seconds), that file changes to CHANGED; the watch is stopped (SIGTERM) when the
    change is archived, or after ``within`` seconds. The seconds it took (None: never), the
    watch's stdout and its stderr."""
    try:
        assert wait_for(lambda: len(responses_of(out, url)) == 1, first) is not None
        time.sleep(1.1)  # the next second: OAI-PMH datestamps are in whole seconds
        (site / "index.html").write_bytes(CHANGED)
        took = wait_for(lambda: CHANGED in responses_of(out, url), within)
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
    return took, stdout, stderr


def test_an_oai_source_is_polled_and_a_changed_file_archived(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=10, seed=7)
    with start_provider(site.root, tmp_path / "index.sqlite", refresh_interval=1) as server:
        out = tmp_path / "coll"
        proc = watch(server.url, out, "--mode", "oai", "--max-interval", "2", "--max-time", "60")
        url = server.url + "/index.html"
        took, stdout, stderr = change_while_watched(proc, site.root, url, out, 20, 15)
        assert took is not None, "the changed file was not archived within 15 s"
        assert proc.returncode == 0, stderr.decode()
        assert json.loads(stdout)["polls"] >= 2
        bodies_archived = responses_of(out, url)
        assert len(bodies_archived) == 2 and bodies_archived[-1] == CHANGED
