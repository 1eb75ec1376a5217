"""Stopping a harvest as a service manager does (SIGTERM), and the ``--workers`` parent's exit
code and its workers' command line, with real processes on a real loopback web and
PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_common.exitcode import ExitCode
from harvester.storage import open_state
from tests.multihost import captures, chains, graph_web
from tests.pgcluster import PGCluster
from tests.servers import RunningServer

HOSTS = ["127.0.0.6", "127.0.0.7"]
PAGES = 10  # per host


@pytest.fixture(scope="module")
def web() -> Iterator[list[RunningServer]]:
    with graph_web(chains(len(HOSTS), PAGES), HOSTS, latency=0.1) as servers:
        yield servers


def _args(web: list[RunningServer], out: Path, *extra: str) -> list[str]:
    return [
        "harvest", web[0].url + "/", "--out", str(out), "--mode", "crawl", "--seed",
        web[1].url + "/", "--crawl-per-host", "1", "--quiet", *extra,
    ]  # fmt: skip


def _until(predicate: object, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_sigterm_ends_a_harvest_as_ctrl_c_does_and_the_next_run_resumes(
    web: list[RunningServer], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "harvester.cli", *_args(web, out, "--delay", "0.3")]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    _until(lambda: list((out / "warcs").glob("*.warc.gz*")))  # under way
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert err.strip().splitlines()[-1] == "harvester: interrupted"  # one line, no traceback
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == ExitCode.OK, done.stderr
    assert len(captures(out)) == PAGES * len(HOSTS)


def test_workers_get_the_arguments_the_parent_was_given_not_sys_argv(
    web: list[RunningServer], tmp_path: Path, pg_cluster: PGCluster
) -> None:
    """``main(argv)`` called from a program whose own ``sys.argv`` is something else."""
    out, state = tmp_path / "out", pg_cluster.new_database()
    args = _args(web, out, "--state", state, "--workers", "2")
    code = f"import sys; from harvester.cli import main; sys.exit(main({args!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code, "unrelated"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == ExitCode.OK, done.stderr
    assert len(captures(out)) == PAGES * len(HOSTS)


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def test_a_worker_killed_by_a_signal_makes_the_parent_exit_interrupted(
    web: list[RunningServer], tmp_path: Path, pg_cluster: PGCluster
) -> None:
    out, state = tmp_path / "out", pg_cluster.new_database()
    args = _args(web, out, "--state", state, "--workers", "2", "--lease", "2", "--delay", "0.3")
    parent = subprocess.Popen(
        [sys.executable, "-m", "harvester.cli", *args], stderr=subprocess.PIPE, text=True
    )
    _until(lambda: len(_children(parent.pid)) == 2)
    site = web[0].url + "/"
    with open_state(state) as opened:
        _until(lambda: sum(opened.captures_by_worker(site).values()) > 0)
    os.kill(_children(parent.pid)[0], signal.SIGKILL)
    _, err = parent.communicate(timeout=120)
    assert parent.returncode == ExitCode.INTERRUPTED, err  # not 247, -9's low byte
