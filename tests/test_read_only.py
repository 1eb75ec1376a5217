"""A collection on a read-only disk is read as it is: ``status``, ``verify``, ``report``, ``wacz``
and ``didl`` run as the README shows them, and none writes a byte into it.

As root (which ignores permission bits) the copy is bind-mounted read-only in a private mount
namespace (``unshare -m``) for the command; as another user it is ``chmod -R a-w`` meanwhile.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands import HARVESTER
from tests.harvested import Harvested, harvested


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harvested]:
    with harvested(tmp_path_factory.mktemp("readonly")) as found:
        yield found


def read_only(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``harvester ARGV`` with ``folder`` read-only for it (and writable again after)."""
    if os.geteuid() == 0:
        mount = 'mount --bind -o ro "$0" "$0" && exec "$@"'
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c", mount, str(folder)]
        return _run([*command, HARVESTER, *argv])
    paths = [folder, *folder.rglob("*")]
    for path in paths:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        return _run([HARVESTER, *argv])
    finally:
        for path in paths:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    }


@pytest.fixture(params=["closed", "crashed"])
def frozen(collection: Harvested, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A copy of the collection, read-only: as its last harvest closed it (no write-ahead log
    beside the state), or as a crash leaves it (a log not folded in yet)."""
    folder = collection.copy(tmp_path / "ro")
    if request.param == "crashed":
        _crash_writing(folder / "state.sqlite")
    yield folder


def _crash_writing(state: Path) -> None:
    crash = "import os, sqlite3, sys; db = sqlite3.connect(sys.argv[1]);"
    crash += "db.execute(\"INSERT OR REPLACE INTO meta VALUES ('crashed', '1')\"); db.commit();"
    crash += "os._exit(0)"
    subprocess.run([sys.executable, "-c", crash, str(state)], check=True)
    assert state.with_name("state.sqlite-wal").is_file()


def test_status_verify_report_wacz_and_didl_read_a_read_only_collection(
    collection: Harvested, frozen: Path, tmp_path: Path
) -> None:
    before = _snapshot(frozen)
    done = read_only(frozen, "status", str(frozen), "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["collections"][0]
    assert found["resources"]["archived"] == len(collection.site.public)
    seeded = len(collection.site.public) + 1  # captures: the files and the root (the seed)

    done = read_only(frozen, "verify", str(frozen), "--quiet", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["captures"] == seeded

    done = read_only(frozen, "report", str(frozen), "--to", str(tmp_path / "r.html"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["captures"] == seeded

    wacz = tmp_path / "c.wacz"
    done = read_only(frozen, "wacz", str(frozen), "--to", str(wacz), "--quiet", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["captures"] == seeded

    done = read_only(frozen, "didl", str(frozen), "--to", str(tmp_path / "didl"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["didl"] == seeded
    assert _snapshot(frozen) == before
