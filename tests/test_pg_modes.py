"""Records mode and ``watch`` on a real PostgreSQL state, end to end, as real processes:
records mode with its default flags (landing pages and files fetched) and with two workers;
a watch of a crawled site and of a provider-backed site keeping its revisits there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harvester.storage import open_state
from tests.pgcluster import PGCluster
from tests.servers import start_wsgi

PYTHON = [sys.executable, "-m", "harvester.cli"]


def _records(server_url: str, out: Path, state: str, *extra: str) -> dict[str, object]:
    argv = [*PYTHON, "harvest", server_url + "/oai", "--out", str(out), "--state", state]
    done = subprocess.run(
        [*argv, "--json", "--quiet", *extra], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}


def test_records_mode_with_default_flags_on_postgresql(
    tmp_path: Path, pg_cluster: PGCluster
) -> None:
    state = pg_cluster.new_database()
    with start_wsgi("tests.records_repo:repository", {}, ready_path="/_log") as server:
        first = _records(server.url, tmp_path / "c", state)
        again = _records(server.url, tmp_path / "c", state)
    assert first["mode"] == "records" and first["records"] == 12, first
    assert first["linked"] == {"fetched": 36, "unchanged": 0, "failed": 0}, first
    assert again["records"] == 0, again
    with open_state(state) as opened:
        rows = opened.db.execute("SELECT COUNT(*) FROM items WHERE status='archived'").fetchone()
    assert rows[0] == 12


def test_records_mode_with_two_workers_on_postgresql(tmp_path: Path, pg_cluster: PGCluster) -> None:
    state = pg_cluster.new_database()
    with start_wsgi("tests.records_repo:repository", {}, ready_path="/_log") as server:
        _records(server.url, tmp_path / "c", state, "--workers", "2")
    with open_state(state) as opened:
        rows = opened.db.execute("SELECT COUNT(*) FROM items WHERE status='archived'").fetchone()
    assert rows[0] == 12
