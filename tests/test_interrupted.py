"""A collection whose harvest was killed (SIGKILL, ``tests/killed_harvester.py``), read by
``status``, ``verify``, ``report``, ``wacz`` and ``didl`` as the README runs them: each finishes
what the next harvest would (repair, state, index, the run's end line) before reading, never
reports success on nothing, and refuses (exit 1, one line) when the collection is read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.run.lock import CollectionLock
from tests.commands import HARVESTER, harvester
from tests.conftest import start_plain_site, start_provider
from tests.servers import RunningServer
from tests.sites import Manifest, make_site
from tests.test_read_only import read_only

KILLED_AT = 10  # groups


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Manifest, RunningServer]]:
    tmp = tmp_path_factory.mktemp("interrupted")
    found = make_site(tmp / "www", pages=30, seed=11)
    with start_provider(found.root, tmp / "index.sqlite") as server:
        yield found, server


@pytest.fixture(scope="module")
def killed(site: tuple[Manifest, RunningServer], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A collection as a harvest SIGKILLed after its tenth group left it (never changed)."""
    _, server = site
    out = tmp_path_factory.mktemp("killed") / "out"
    argv = [sys.executable, "-m", "tests.killed_harvester", str(KILLED_AT), "harvest"]
    argv += [server.url + "/", "--out", str(out), "--quiet"]
    done = subprocess.run(argv, capture_output=True, timeout=300, check=False)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    assert list((out / "warcs").glob("*.warc.gz.open"))
    return out


def responses(folder: Path) -> int:
    count = 0
    for path in (folder / "warcs").glob("*.warc.gz"):
        with open(path, "rb") as fh:
            count += sum(1 for r in ArchiveIterator(fh) if r.rec_type == "response")
    return count


def runs(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]


READERS = ["verify", "status", "report", "wacz", "didl"]  # the commands that read a collection


def _to(command: str, tmp_path: Path) -> list[str]:
    """The ``--to`` a reading command writes to, if it writes."""
    written = {"report": "r.html", "wacz": "w", "didl": "didl"}
    return ["--to", str(tmp_path / written[command])] if command in written else []


@pytest.mark.parametrize("command", READERS)
def test_a_reading_command_finishes_the_interrupted_harvest_first(
    killed: Path, tmp_path: Path, command: str
) -> None:
    folder = Path(shutil.copytree(killed, tmp_path / "c"))
    done = harvester(command, str(folder), *_to(command, tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    assert not list((folder / "warcs").glob("*.open")), "the .open file was repaired"
    captured = responses(folder)
    assert captured >= KILLED_AT - 1
    end = runs(folder)[-1]
    assert end["event"] == "end" and end["interrupted"] is True and end["exit"] is None

    verified = harvester("verify", str(folder), "--quiet", "--json")
    assert verified.returncode == 0, verified.stdout
    found = json.loads(verified.stdout)
    assert found["warcs"] >= 1 and found["captures"] == found["index_lines"] == captured


def test_the_next_harvest_after_a_repair_finishes_the_job(
    killed: Path, site: tuple[Manifest, RunningServer], tmp_path: Path
) -> None:
    pages, server = site
    folder = Path(shutil.copytree(killed, tmp_path / "c"))
    shown = harvester("status", str(folder))
    assert shown.returncode == 0 and "interrupted (killed; repaired since)" in shown.stdout
    again = harvester("harvest", server.url + "/", "--out", str(folder), "--quiet")
    assert again.returncode == 0, again.stderr
    verified = harvester("verify", str(folder), "--quiet", "--json")
    found = json.loads(verified.stdout)
    seeded = len(pages.public) + 1  # the site's files and its root (harvester/listed/seed.py)
    assert verified.returncode == 0 and found["captures"] == seeded


@pytest.mark.parametrize("command", READERS)
def test_a_read_only_interrupted_collection_is_refused_in_one_line(
    killed: Path, tmp_path: Path, command: str
) -> None:
    folder = Path(shutil.copytree(killed, tmp_path / "c"))
    (left,) = (folder / "warcs").glob("*.open")
    done = read_only(folder, command, str(folder), *_to(command, tmp_path))
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"harvester: {folder}: an interrupted harvest left {left.name}")
    assert left.exists()


def test_a_running_harvests_open_file_is_left_to_it(killed: Path, tmp_path: Path) -> None:
    """While a harvest holds the collection's lock its ``.open`` file is being written: the
    reading commands read the finished files and touch nothing."""
    folder = Path(shutil.copytree(killed, tmp_path / "c"))
    before = sorted(p.name for p in (folder / "warcs").iterdir())
    with CollectionLock(folder):
        done = harvester("verify", str(folder), "--quiet", "--json")
        assert done.returncode == 0, done.stdout
        assert sorted(p.name for p in (folder / "warcs").iterdir()) == before


def test_a_killed_crawl_is_finished_by_verify_and_resumed_by_the_next_crawl(
    tmp_path: Path,
) -> None:
    pages = make_site(tmp_path / "www", pages=30, seed=12)
    folder = tmp_path / "out"
    with start_plain_site(pages.root, tmp_path / "index.sqlite") as server:
        argv = ["harvest", server.url + "/", "--out", str(folder), "--quiet", "--mode", "crawl"]
        argv += ["--delay-factor", "0"]
        killer = [sys.executable, "-m", "tests.killed_harvester", str(KILLED_AT)]
        done = subprocess.run([*killer, *argv], capture_output=True, timeout=300, check=False)
        assert done.returncode == -9, done.stderr.decode()[-2000:]
        assert list((folder / "warcs").glob("*.warc.gz.open"))

        verified = harvester("verify", str(folder), "--quiet", "--json")
        assert verified.returncode == 0, verified.stdout
        found = json.loads(verified.stdout)
        assert found["warcs"] >= 1 and found["index_lines"] == responses(folder) >= 1
        assert runs(folder)[-1]["interrupted"] is True

        again = harvester(*argv)
        assert again.returncode == 0, again.stderr
    verified = harvester("verify", str(folder), "--quiet", "--json")
    assert verified.returncode == 0, verified.stdout
    linked = {f"{server.url}/{quote(os.fsencode(p), safe='/')}" for p in pages.linked}
    with_records = set()
    for path in (folder / "warcs").glob("*.warc.gz"):
        with open(path, "rb") as fh:
            with_records |= {
                r.rec_headers["WARC-Target-URI"]
                for r in ArchiveIterator(fh)
                if r.rec_type in ("response", "revisit")
            }
    assert linked <= with_records


def test_ctrl_c_in_a_crawl_then_verify_wacz_and_report_read_what_it_archived(
    tmp_path: Path,
) -> None:
    """Ctrl-C (SIGINT): the crawl ends with exit 130 and its end line, its WARC file often
    still ``.open`` (the archiving process's); ``verify``, ``wacz`` and ``report`` count what
    it archived, not nothing."""
    pages = make_site(tmp_path / "www", pages=200, seed=13)
    folder = tmp_path / "out"
    with start_plain_site(pages.root, tmp_path / "index.sqlite") as server:
        argv = [HARVESTER, "harvest", server.url + "/", "--out", str(folder), "--quiet"]
        argv += ["--mode", "crawl", "--delay-factor", "0", "--delay", "0.02"]
        crawl = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and crawl.poll() is None:
            if sum(p.stat().st_size for p in folder.glob("warcs/*.open")) > 16 * 1024:
                break
            time.sleep(0.02)
        assert crawl.poll() is None, "the crawl ended before it could be interrupted"
        crawl.send_signal(signal.SIGINT)
        _out, err = crawl.communicate(timeout=120)
    assert crawl.returncode == 130, err.decode()
    assert runs(folder)[-1]["exit"] == 130

    verified = harvester("verify", str(folder), "--quiet", "--json")
    assert verified.returncode == 0, verified.stdout
    found = json.loads(verified.stdout)
    assert found["warcs"] >= 1 and found["index_lines"] == responses(folder) > 0
    packaged = harvester("wacz", str(folder), "--to", str(tmp_path / "c.wacz"), "--json")
    assert json.loads(packaged.stdout)["captures"] == found["index_lines"]
    reported = harvester("report", str(folder), "--to", str(tmp_path / "r.html"), "--json")
    assert json.loads(reported.stdout)["captures"] >= found["index_lines"]
