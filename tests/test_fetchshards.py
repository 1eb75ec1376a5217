"""The listed path fetched by several processes (``--fetch-processes``), over real sockets:
every public file archived once, in WARC files of each process, and a killed process fails
the run without losing anything."""

from __future__ import annotations

import json
import mmap
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvester.archive.cdx.index import CdxIndex
from harvester.archive.repair import verify_warc
from harvester.listed.fetchstep import Shard
from harvester.listed.shards import _SLOT, AUTO_MAX, AUTO_MIN_BYTES, SAMPLE, _with_children
from harvester.summary import Summary
from tests.conftest import start_provider
from tests.servers import RunningServer
from tests.sites import Manifest, make_site
from tests.test_harvest import listed_records, url_of

PID = re.compile(r"-(\d+)\.warc\.gz$")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Manifest, RunningServer]]:
    root = tmp_path_factory.mktemp("shards")
    site = make_site(root / "www", pages=150, seed=21)
    with start_provider(site.root, root / "index.sqlite", page_size=50) as server:
        yield site, server


def run(
    server: RunningServer, out: Path, *flags: str, program: tuple[str, ...] = ("harvester.cli",)
) -> tuple[int, dict[str, object], str]:
    """(exit code, the JSON summary or {}, stderr) of one harvest of ``server`` into ``out``."""
    argv = [sys.executable, "-m", *program, "harvest", server.url, "--out", str(out)]
    argv += ["--quiet", "--json", *flags]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    lines = done.stdout.strip().splitlines()
    summary = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return done.returncode, summary, done.stderr


def writers(out: Path) -> set[str]:
    """The pids in the collection's WARC file names: one per process that wrote any."""
    return {m.group(1) for p in (out / "warcs").iterdir() if (m := PID.search(p.name))}


def assert_archived_once(
    out: Path, server: RunningServer, site: Manifest, kinds: tuple[str, ...] = ("response",)
) -> None:
    """Each public file has exactly one record of ``kinds``; every WARC file is whole and
    closed; the CDXJ index finds every file."""
    endpoint = f"{server.url}/oai?"
    responses = Counter(
        h["WARC-Target-URI"]
        for t, h, _c in listed_records(out)
        if t in kinds and not h["WARC-Target-URI"].startswith(endpoint)
    )
    expected = {url_of(server, p) for p in site.public}
    assert set(responses) == expected, "no holes"
    assert max(responses.values()) == 1, "no duplicate response records"
    for path in (out / "warcs").iterdir():
        assert path.name.endswith(".warc.gz"), f"left over: {path.name}"
        assert verify_warc(path) > 0
    index = CdxIndex(out / "indexes" / "index.cdxj")
    assert all(index.lookup(url) for url in expected)


def test_two_processes_archive_every_file_once(
    served: tuple[Manifest, RunningServer], tmp_path: Path
) -> None:
    site, server = served
    out = tmp_path / "out"
    code, summary, err = run(server, out, "--fetch-processes", "2")
    assert (code, err) == (0, "")
    assert summary["fetched"] == summary["listed"] == len(site.public)
    assert summary["coverage"] == 1.0 and summary["failed"] == 0
    assert summary["bytes"] == sum((site.root / p).stat().st_size for p in site.public)
    assert len(writers(out)) == 2, "both processes wrote their share"
    assert_archived_once(out, server, site)
    again = run(server, out, "--fetch-processes", "2")
    assert again[0] == 0 and again[1]["fetched"] == again[1]["unchanged"] == 0


def test_a_small_site_is_fetched_by_one_process_by_default(
    served: tuple[Manifest, RunningServer], tmp_path: Path
) -> None:
    """Its first ``SAMPLE`` files (a commit of their own) tell few bytes are due: the rest
    is fetched by the same process, every file once."""
    site, server = served
    code, summary, _err = run(server, tmp_path / "out")
    assert code == 0 and summary["fetched"] == len(site.public) > SAMPLE
    assert len(writers(tmp_path / "out")) == 1
    assert_archived_once(tmp_path / "out", server, site)


def test_a_killed_fetching_process_fails_the_run_and_the_rerun_finishes(
    served: tuple[Manifest, RunningServer], tmp_path: Path
) -> None:
    site, server = served
    out = tmp_path / "out"
    killer = ("tests.killed_harvester", "forked:20")
    code, summary, err = run(server, out, "--fetch-processes", "3", program=killer)
    assert code == 1 and summary == {}
    assert err.count("\n") == 1, err
    assert err.startswith("harvester: a fetching process ended by signal 9;"), err
    assert "run the same command again" in err
    assert list((out / "warcs").glob("*.open")), "the killed processes' files are left open"
    code, summary, err = run(server, out)
    assert code == 0
    assert [line for line in err.splitlines() if "repaired" not in line] == []
    assert summary["coverage"] == 1.0
    assert 0 < summary["fetched"] < len(site.public), "only what the killed ones left"
    assert_archived_once(out, server, site)


def test_a_fetching_process_s_error_is_the_run_s_one_line(
    served: tuple[Manifest, RunningServer], tmp_path: Path
) -> None:
    site, server = served
    out = tmp_path / "out"
    failing = ("tests.killed_harvester", "forked:fail")
    code, summary, err = run(server, out, "--fetch-processes", "2", program=failing)
    assert (code, summary) == (1, {})
    assert err == (
        "harvester: a fetching process failed: cannot write /full/disk.warc.gz: No space left"
        " on device; what it did not archive stays pending: run the same command again to"
        " finish\n"
    )
    code, summary, _err = run(server, out)
    assert code == 0 and 0 < summary["fetched"] < len(site.public)
    assert_archived_once(out, server, site)


def children_of(pid: int) -> set[int]:
    """The live processes whose parent is ``pid`` (Linux /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_fetching_processes_die_with_the_first(
    served: tuple[Manifest, RunningServer], tmp_path: Path
) -> None:
    site, server = served
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "tests.killed_harvester", "forked:slow", "harvest", server.url]
    argv += ["--out", str(out), "--quiet", "--fetch-processes", "3", "--concurrency", "3"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    forked: set[int] = set()
    deadline = time.monotonic() + 60
    while proc.poll() is None and len(forked) < 2 and time.monotonic() < deadline:
        forked = children_of(proc.pid)
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    assert len(forked) == 2, "caught the run while its two children fetched"
    gone_by = time.monotonic() + 1  # their shares would take them 2.5 s more
    while any(alive(pid) for pid in forked) and time.monotonic() < gone_by:
        time.sleep(0.01)
    assert not any(alive(pid) for pid in forked), "a child outlived the SIGKILLed first process"
    code, summary, _err = run(server, out)
    assert code == 0 and summary["coverage"] == 1.0
    assert_archived_once(out, server, site)


def test_a_negative_process_count_is_a_usage_error(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "harvester.cli", "harvest", "http://127.0.0.1:9/"]
    argv += ["--out", str(tmp_path / "out"), "--fetch-processes", "-1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "fetch_processes must be 0 (one a core) or more" in done.stderr
    assert not (tmp_path / "out").exists()


def test_didl_lists_in_threads_then_fetches_the_larger_files_in_processes(
    tmp_path: Path,
) -> None:
    """The ``didl`` list reads its pages in threads; the files above the provider's
    ``inline_max`` are fetched after it, here by two processes, forked once those threads
    are gone."""
    site = make_site(tmp_path / "www", pages=80, seed=23)
    with start_provider(
        site.root, tmp_path / "index.sqlite", page_size=20, records_page_size=20, inline_max=600
    ) as server:
        out = tmp_path / "out"
        code, summary, err = run(server, out, "--oai-strategy", "didl", "--fetch-processes", "2")
        assert (code, err) == (0, "")
        large = {p for p in site.public if (site.root / p).stat().st_size > 600}
        assert 20 < len(large) < len(site.public), "some files carried, some fetched"
        assert summary["fetched"] == len(site.public) and summary["coverage"] == 1.0
        assert len(writers(out)) == 2, "the list's process, then it and one forked fetching"
        assert_archived_once(out, server, site, kinds=("response", "resource"))


@pytest.fixture(scope="module")
def large_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, int]]:
    """24 files of just over ``AUTO_MIN_BYTES / 16`` and a small one, served; and that size."""
    root = tmp_path_factory.mktemp("large") / "www"
    root.mkdir()
    size = AUTO_MIN_BYTES // 16 + 1
    for n in range(24):
        (root / f"big-{n}.bin").write_bytes(bytes([n]) * size)
    (root / "small.txt").write_bytes(b"carried by value")
    with start_provider(root, root.parent / "index.sqlite") as server:
        yield server, size


@pytest.mark.parametrize("strategy", ["didl", "get"])
def test_a_few_large_files_are_fetched_by_a_process_a_core(
    large_files: tuple[RunningServer, int], strategy: str, tmp_path: Path
) -> None:
    """Fewer than ``AUTO_MIN`` files, but large ones: their digests and compression bound one
    process, so a process a core fetches them by default. Strategy ``didl`` knows their
    bytes from its list (the DIDLs' Content-Length of the files not carried); ``get``'s list
    tells no sizes, so it guesses them from its first ``SAMPLE`` files (here 16 remain:
    32 MiB). 16 files or more left: all in one process's share once in 2**15."""
    server, size = large_files
    out = tmp_path / "out"
    code, summary, err = run(server, out, "--oai-strategy", strategy)
    assert (code, err) == (0, "")  # no home page: the seed's 404 is archived, no warning
    assert summary["fetched"] == 25 and summary["bytes"] == 24 * size + 16
    assert summary["seed"] == "http-404"
    assert len(writers(out)) == min(os.cpu_count() or 1, AUTO_MAX)
    for path in (out / "warcs").iterdir():
        assert verify_warc(path) > 0


def test_files_named_in_sequence_are_split_between_two_processes() -> None:
    """The URLs of ``f0.bin`` ... ``f7.bin`` differ only in the last digit's three low bits,
    which never changed their CRC-32 modulo 2: all went to one process, which fetched them
    while the other had nothing to do."""
    for port in (80, 8000, 41234):
        urls = [f"http://127.0.0.1:{port}/f{n}.bin" for n in range(8)]
        mine = [url in Shard(0, 2) for url in urls]
        assert any(mine) and not all(mine), port
        assert [url in Shard(1, 2) for url in urls] == [not m for m in mine]


def test_the_processes_share_the_per_host_connections(tmp_path: Path) -> None:
    """Three processes with ``--per-host 4`` have at most 4 requests in flight to the provider
    in all (2 + 1 + 1), never 3 each rounded up (2 + 2 + 2): the provider holds each request
    long enough for every connection to be busy, and counts them."""
    site = make_site(tmp_path / "www", pages=150, seed=21)
    app, ready = "tests.counting_provider:create_app", "/_most_in_flight"
    index = tmp_path / "index.sqlite"
    with start_provider(site.root, index, app=app, ready_path=ready, page_size=50) as server:
        flags = ("--fetch-processes", "3", "--per-host", "4", "--concurrency", "16")
        code, summary, err = run(server, tmp_path / "out", *flags)
        assert (code, err) == (0, "")
        assert summary["fetched"] == len(site.public)
        most = int(urllib.request.urlopen(server.url + "/_most_in_flight", timeout=10).read())
        assert 3 <= most <= 4, most
        assert_archived_once(tmp_path / "out", server, site)


def test_the_children_s_progress_is_summed_at_most_every_tenth_of_a_second() -> None:
    counters = mmap.mmap(-1, _SLOT.size * 2)
    _SLOT.pack_into(counters, _SLOT.size, 5, 500)  # the child's: 5 resources, 500 bytes
    now = [0.0]
    shown: list[tuple[int, int, int]] = []
    progress = _with_children(
        lambda s, left: shown.append((s.fetched, s.bytes, left)), counters, 2, lambda: now[0]
    )
    for step in range(30):  # a resource every 1/64 s
        now[0] = step / 64
        progress(Summary(fetched=step, bytes=10 * step), 100 - step)
    # steps 0, 7, 14, 21 and 28: the first call, then 0.1 s or more after the last shown
    assert shown == [(5, 500, 95), (12, 570, 88), (19, 640, 81), (26, 710, 74), (33, 780, 67)]
