"""Depth is the shortest known distance from a seed, whatever the order of discovery: a page
first reached through a long path, whose link was refused for depth, is followed again when a
shorter path reaches it later, so one worker and three archive the same set (real harvester
processes on a loopback web; three workers on a real PostgreSQL)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_common.exitcode import ExitCode
from tests.multihost import captures, graph_web
from tests.pgcluster import PGCluster
from tests.servers import RunningServer

HOSTS = ["127.0.0.8", "127.0.0.9", "127.0.0.10"]
# Host 0 (fast): / -> /x -> host 2's /t: /t is reached at depth 2 first.
# Host 1 (slow: its root answers after 2 s): / -> host 2's /t, depth 1, found later.
# Host 2 (fast, a seed too): /t -> /u, refused at depth 3 through host 0, admitted at
# depth 2 through host 1.
GRAPHS: list[dict[str, list[list[object]]]] = [
    {"/": [[0, "/x"]], "/x": [[2, "/t"]]},
    {"/": [[2, "/t"]]},
    {"/": [], "/t": [[2, "/u"]], "/u": []},
]
LATENCY = [0.0, 2.0, 0.0]


@pytest.fixture(scope="module")
def web() -> Iterator[list[RunningServer]]:
    with graph_web(GRAPHS, HOSTS, LATENCY) as servers:
        yield servers


def _crawl(web: list[RunningServer], out: Path, *extra: str) -> set[str]:
    argv = [
        sys.executable, "-m", "harvester.cli", "harvest", web[0].url + "/", "--out", str(out),
        "--mode", "crawl", "--seed", web[1].url + "/", "--seed", web[2].url + "/", "--max-depth",
        "2", "--quiet", *extra,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    assert done.returncode == ExitCode.OK, done.stderr
    return set(captures(out))


def test_a_page_refused_for_depth_is_admitted_when_a_shorter_path_reaches_it(
    web: list[RunningServer], tmp_path: Path, pg_cluster: PGCluster
) -> None:
    a, b, c = (server.url for server in web)
    expected = {a + "/", a + "/x", b + "/", c + "/", c + "/t", c + "/u"}
    assert _crawl(web, tmp_path / "one") == expected
    state = pg_cluster.new_database()
    assert _crawl(web, tmp_path / "three", "--state", state, "--workers", "3") == expected
