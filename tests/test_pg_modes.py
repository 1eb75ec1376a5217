"""Records mode and ``watch`` on a real PostgreSQL state, end to end, as real processes:
records mode with its default flags (landing pages and files fetched) and with two workers;
a watch of a crawled site and of a provider-backed site keeping its revisits there; a listed
job of two workers capturing its seed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harvester.storage import open_state
from tests.conftest import start_provider
from tests.pgcluster import PGCluster
from tests.servers import start_wsgi
from tests.sites import make_site
from tests.test_harvest import records

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


def _watch(url: str, out: Path, state: str, *flags: str) -> dict[str, int]:
    argv = [*PYTHON, "watch", url + "/", "--out", str(out), "--state", state, "--json", *flags]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def _revisits(state: str) -> tuple[int, int]:
    """(URLs watched, revisits seen) in the state's revisits table."""
    with open_state(state) as opened:
        row = opened.db.execute("SELECT COUNT(*), SUM(visits) FROM revisits").fetchone()
    return int(row[0]), int(row[1] or 0)


def test_a_watch_keeps_its_revisits_in_postgresql_and_a_restart_continues(
    tmp_path: Path, pg_cluster: PGCluster
) -> None:
    state, out = pg_cluster.new_database(), tmp_path / "w"
    rates = {"rates": [0.5, *[0.0] * 9], "seed": 2}
    with start_wsgi("tests.changing_site:changing_site", rates) as server:
        first = _watch(server.url, out, state, "--rate", "10", "--max-time", "4")
        urls, visits = _revisits(state)
        again = _watch(server.url, out, state, "--rate", "10", "--max-time", "2")
    assert first["fetches"] >= 20 and first["new_urls"] == 10, first
    assert urls == 11 and visits > 0
    assert again["new_urls"] == 0 and again["fetches"] > 0, again  # it knew every URL
    assert _revisits(state)[1] > visits


def test_a_watch_polls_a_provider_backed_site_on_postgresql(
    tmp_path: Path, pg_cluster: PGCluster
) -> None:
    site = make_site(tmp_path / "www", pages=5, seed=3)
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        summary = _watch(server.url, tmp_path / "w", pg_cluster.new_database(), "--max-time", "5")
    assert summary["polls"] >= 2 and summary["changed"] > 5, summary  # the first poll's files


def test_a_listed_job_of_two_workers_captures_its_seed_at_every_run(
    tmp_path: Path, pg_cluster: PGCluster
) -> None:
    """The site's root, which no list names, is captured by each run of the job: once by
    workers that run together (the lease ``seed:URL``; a worker that starts after the others
    are done is a run of its own), first a response, then revisits; the state keeps it apart
    from the listed files."""
    state = pg_cluster.new_database()
    site = make_site(tmp_path / "www", pages=10, seed=3)
    out = tmp_path / "c"
    home, seen, per_run = "", set(), []
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        home = server.url + "/"
        for _run in range(2):
            argv = [*PYTHON, "harvest", server.url, "--out", str(out), "--state", state]
            done = subprocess.run(
                [*argv, "--workers", "2", "--quiet"], capture_output=True, text=True, timeout=240
            )
            assert done.returncode == 0, done.stderr
            new = sorted(
                (h["WARC-Date"], t, h["WARC-Record-ID"])
                for t, h, _c in records(out)
                if h.get("WARC-Target-URI") == home
                and t != "request"
                and h["WARC-Record-ID"] not in seen
            )
            seen.update(rec_id for _d, _t, rec_id in new)
            per_run.append([t for _d, t, _id in new])
    assert [kinds[0] for kinds in per_run] == ["response", "revisit"]
    assert all(1 <= len(kinds) <= 2 for kinds in per_run), per_run  # at most one a worker
    assert set(per_run[0][1:] + per_run[1]) == {"revisit"}
    with open_state(state) as opened:
        assert opened.get(home).status == "seed"  # type: ignore[union-attr]
        assert opened.counts(server.url) == {"archived": len(site.public)}
