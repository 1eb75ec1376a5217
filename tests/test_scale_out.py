"""Many workers, one job (issue 16): real worker processes on one PostgreSQL state crawl a
multi-host loopback web; each host is leased to one worker at a time, politeness is measured
at the servers, and a SIGKILLed worker's hosts are reclaimed once its leases expire."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_common.exitcode import ExitCode
from harvester.crawl.leasing import HostLeasing
from harvester.exceptions import LeaseLost
from harvester.storage import open_state
from harvester.storage.protocol import State
from tests.multihost import captures, chains, graph_web, most_at_once
from tests.pgcluster import PGCluster
from tests.servers import RunningServer

HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
PAGES = 12  # per host


@pytest.fixture(scope="module")
def web() -> Iterator[list[RunningServer]]:
    """A chain of pages per host, each also linking the next host's root."""
    with graph_web(chains(len(HOSTS), PAGES), HOSTS, latency=0.05) as servers:
        yield servers


@pytest.fixture(scope="module")
def slow_web() -> Iterator[list[RunningServer]]:
    """The same web, each answer taking 0.3 s: a host is busy most of the time."""
    with graph_web(chains(len(HOSTS), PAGES), HOSTS, latency=0.3) as servers:
        yield servers


def _command(web: list[RunningServer], out: Path, state: str, *extra: str) -> list[str]:
    seeds = [arg for s in web[1:] for arg in ("--seed", s.url + "/")]
    return [
        sys.executable, "-m", "harvester.cli", "harvest", web[0].url + "/", "--out", str(out),
        "--mode", "crawl", "--state", state, "--crawl-per-host", "1", "--delay-factor", "0",
        "--quiet", *seeds, *extra,
    ]  # fmt: skip


def _spans(server: RunningServer) -> list[list[float]]:
    with urllib.request.urlopen(server.url + "/_spans", timeout=10) as response:
        spans: list[list[float]] = json.loads(response.read())
    return spans


def _log(server: RunningServer) -> list[list[object]]:
    with urllib.request.urlopen(server.url + "/_log", timeout=10) as response:
        log: list[list[object]] = json.loads(response.read())
    return log


def test_workers_share_a_crawl_each_page_once_one_request_per_host(
    web: list[RunningServer], tmp_path: Path, pg_cluster: PGCluster
) -> None:
    state = pg_cluster.new_database()
    before = [len(_spans(s)) for s in web]
    logged = [len(_log(s)) for s in web]
    out = tmp_path / "out"
    done = subprocess.run(
        [*_command(web, out, state), "--workers", "3"], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == ExitCode.OK, done.stderr
    seen = captures(out)
    assert len(seen) == PAGES * len(HOSTS) and set(seen.values()) == {1}  # none twice, none lost
    for server, skip, skip_log in zip(web, before, logged, strict=True):
        # across all workers, at the server, robots.txt and sitemaps included, from the first
        assert most_at_once(_spans(server)[skip:]) == 1
        paths = [path for _, path in _log(server)[skip_log:]]
        assert paths.count("/sitemap.xml") == 1  # read once in the job, by the host's holder
    with open_state(state) as opened:
        by_worker = opened.captures_by_worker(web[0].url + "/")
    assert len(by_worker) >= 2 and sum(by_worker.values()) == PAGES * len(HOSTS)
    for worker in by_worker:  # each worker's own WARC files and CDXJ
        assert list((out / "warcs").glob(f"*-{worker}-*.warc.gz"))
        assert (out / "indexes" / f"index-{worker}.cdxj").exists()


def test_a_sigkilled_workers_hosts_are_reclaimed_after_its_lease(
    web: list[RunningServer], tmp_path: Path, pg_cluster: PGCluster
) -> None:
    state = pg_cluster.new_database()
    out = tmp_path / "out"
    victim = subprocess.Popen(
        [*_command(web, out, state), "--worker", "victim", "--lease", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    site = web[0].url + "/"
    with open_state(state) as opened:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not opened.captures_by_worker(site).get("victim"):
            time.sleep(0.1)
        os.kill(victim.pid, signal.SIGKILL)  # mid-crawl: it holds every host
        victim.wait(timeout=10)
        held = opened.leases.held(site) if opened.leases else {}
        assert held and set(held.values()) == {"victim"}
    started = time.monotonic()
    done = subprocess.run(
        [*_command(web, out, state), "--worker", "heir", "--lease", "2"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stderr
    assert time.monotonic() - started >= 1.0  # it had to wait for the leases to expire
    seen = captures(out)
    assert len(seen) == PAGES * len(HOSTS)  # nothing lost
    assert sum(seen.values()) - len(seen) <= len(HOSTS)  # at most what was in flight, again


def test_a_worker_joining_mid_crawl_asks_no_host_that_another_holds(
    slow_web: list[RunningServer], tmp_path: Path, pg_cluster: PGCluster
) -> None:
    """A replacement worker started while another crawls reads no robots.txt or sitemap of
    a host the other holds: at the servers, one request in flight per host throughout."""
    state, out, site = pg_cluster.new_database(), tmp_path / "out", slow_web[0].url + "/"
    before = [len(_spans(s)) for s in slow_web]
    command = [*_command(slow_web, out, state), "--delay", "0.2"]
    first = subprocess.Popen([*command, "--worker", "first"], stderr=subprocess.PIPE, text=True)
    with open_state(state) as opened:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not opened.captures_by_worker(site).get("first"):
            time.sleep(0.05)
    late = subprocess.run(
        [*command, "--worker", "late"], capture_output=True, text=True, timeout=240
    )
    assert first.wait(timeout=240) == ExitCode.OK and late.returncode == ExitCode.OK, late.stderr
    assert len(captures(out)) == PAGES * len(HOSTS)
    for server, skip in zip(slow_web, before, strict=True):
        assert most_at_once(_spans(server)[skip:]) == 1


def test_workers_with_default_flags_keep_to_the_default_per_host_limit(
    slow_web: list[RunningServer], tmp_path: Path, pg_cluster: PGCluster
) -> None:
    """As a user runs it: ``--mode auto`` (each worker would probe the site for a provider)
    and ``--crawl-per-host`` 2, its default: at most 2 requests in flight per host."""
    state, out = pg_cluster.new_database(), tmp_path / "out"
    before = [len(_spans(s)) for s in slow_web]
    seeds = [arg for s in slow_web[1:] for arg in ("--seed", s.url + "/")]
    argv = [sys.executable, "-m", "harvester.cli", "harvest", slow_web[0].url + "/", "--out"]
    argv += [str(out), "--state", state, "--workers", "3", "--quiet", *seeds]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    assert done.returncode == ExitCode.OK, done.stderr
    assert len(captures(out)) == PAGES * len(HOSTS)
    for server, skip in zip(slow_web, before, strict=True):
        assert most_at_once(_spans(server)[skip:]) <= 2


def test_two_workers_racing_for_one_host_one_wins_and_the_fence_holds(
    pg_cluster: PGCluster,
) -> None:
    """Processes claim the same host at once: exactly one gets it. Then the first holder's
    lease expires and a second claims it: the first one's acknowledgement is refused."""
    url = pg_cluster.new_database()
    site = "http://127.0.0.2:9/"
    with open_state(url) as state:
        state.add_pending(site, [site + "a"])
    claim = (  # each racer opens the state, says so, and claims when a line comes on stdin
        "import sys; from harvester.storage import open_state\n"
        "s = open_state(sys.argv[1]); s.open(); s.leases.seconds = 2.0\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
        "print(len(s.leases.claim_hosts(sys.argv[2], sys.argv[3], 'fetch', 1)))"
    )
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", claim, url, site, f"w{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    for racer in racers:
        assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
    for racer in racers:  # all open and waiting: now they race (no lease expires meanwhile)
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    assert sorted(int(p.communicate(timeout=60)[0]) for p in racers) == [0, 0, 0, 1]
    with open_state(url) as state:
        assert state.leases is not None
        state.leases.seconds = 0.5
        _until_expired(state, site)  # the winner's lease (2 s)
        (mine,) = state.leases.claim_hosts(site, "late", "fetch", 1)
        assert state.leases.claim_hosts(site, "later", "fetch", 1) == []
        with open_state(url) as stale:
            assert stale.leases is not None
            old = mine.__class__(mine.name, "w0", mine.token - 1, 0.0)
            with pytest.raises(LeaseLost), stale.transaction():
                stale.leases.acknowledge(site, old, site + "a")
        with state.transaction():
            state.leases.acknowledge(site, mine, site + "a")


def _until_expired(state: State, site: str, seconds: float = 30.0) -> None:
    """Wait until no lease of ``site`` is live by the state's own clock (polled, bounded)."""
    assert state.leases is not None
    deadline = time.monotonic() + seconds
    while state.leases.held(site):
        assert time.monotonic() < deadline, f"a lease of {site} outlived {seconds} s"
        time.sleep(0.05)


def _leasing(state: State, most: int | None = None) -> HostLeasing:
    assert state.leases is not None
    return HostLeasing(state.leases, "http://job/", "w1", kind="fetch", most=most)


def _rebalance(leasing: HostLeasing) -> tuple[set[str], set[str]]:
    """One rebalance of a worker with nothing queued or in flight here: (claimed, given up)."""
    claimed, gone = leasing.rebalance(0.0, lambda h: True, lambda h: True, lambda h: 0.0)
    return {lease.host for lease in claimed}, set(gone)


def test_a_host_spent_here_is_kept_and_reopened_while_the_state_has_work_for_it(
    pg_cluster: PGCluster,
) -> None:
    """A worker that fetched all it had of a host keeps the host if other workers queued
    more of it meanwhile (given back, it would wait for the next claim round)."""
    with open_state(pg_cluster.new_database()) as state:
        state.add_pending("http://job/", ["http://a.example/1", "http://b.example/1"])
        leasing = _leasing(state)
        assert _rebalance(leasing) == ({"a.example", "b.example"}, set())
        state.db.execute("UPDATE resources SET status='archived' WHERE url='http://a.example/1'")
        assert _rebalance(leasing) == ({"b.example"}, {"a.example"})  # b: open it again
        assert set(leasing.held) == {"b.example"}
        assert state.leases is not None
        assert state.leases.held("http://job/") == {"host:b.example": "w1"}


def test_a_worker_holds_no_more_hosts_than_it_can_fetch_at_once(pg_cluster: PGCluster) -> None:
    with open_state(pg_cluster.new_database()) as state:
        state.add_pending("http://job/", [f"http://h{h}.example/1" for h in range(4)])
        capped, other = _leasing(state, most=2), _leasing(state)
        assert len(_rebalance(capped)[0]) == 2
        other.worker = "w2"
        assert len(_rebalance(other)[0]) == 2  # the other two: free for another worker


def test_a_dead_workers_hosts_are_claimed_before_untouched_ones(pg_cluster: PGCluster) -> None:
    """A worker that holds only what it can fetch claims the hosts a dead worker left half
    done before hosts nobody started (else they wait until every fresh host is taken)."""
    with open_state(pg_cluster.new_database()) as state:
        assert state.leases is not None
        state.add_pending("http://job/", [f"http://h{h}.example/1" for h in range(4)])
        state.leases.seconds = 0.3
        (dead,) = state.leases.claim_hosts("http://job/", "dead", "fetch", 1)
        _until_expired(state, "http://job/")  # it never released it
        (heir,) = state.leases.claim_hosts("http://job/", "heir", "fetch", 1)
        assert heir.name == dead.name and heir.token == dead.token + 1
