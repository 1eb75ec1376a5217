"""The crawl's archiving process (``harvester/crawl/archivist.py``): a real fork, a real
socket pair, real WARC files; crawls of a real site on loopback through the CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.archive.recorder import Recorder, ends_group
from harvester.archive.repair import repair_open_files, verify_warc
from harvester.archive.warc import RotatingWARCWriter
from harvester.crawl.archivist import ArchiveProcess
from harvester.http.exchange import HttpExchange
from harvester.settings import load_settings
from harvester.storage.values import Resource
from tests.conftest import start_plain_site
from tests.sites import make_site
from tests.test_crawl import crawl, url_of
from tests.test_exchangerecords import exchange
from tests.test_harvest import records

HTML = b'<html><body><a href="/next.html">next</a><img src="/i.png"></body></html>'


def page(url: str) -> tuple[Resource, HttpExchange]:
    res = Resource(url)
    headers = (("Content-Type", "text/html"), ("Content-Length", str(len(HTML))))
    result = exchange(url=url, body=HTML, response_headers=headers)
    return res, result


def pids(out: Path) -> set[int]:
    """The pids in the names of a collection's WARC files (``...-<serial>-<pid>.warc.gz``)."""
    return {int(p.name.split(".warc.gz")[0].rsplit("-", 1)[1]) for p in (out / "warcs").iterdir()}


def test_a_crawl_archived_apart_keeps_what_one_process_keeps(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=40, seed=14)
    with start_plain_site(site.root, tmp_path / "index.sqlite") as server:
        kept = {}
        for processes in (1, 2):
            out = tmp_path / f"out{processes}"
            summary = crawl(server.url + "/", out, delay_factor=0.0, crawl_processes=processes)
            assert summary["failed"] == 0
            recs = records(out)
            kept[processes] = (
                Counter(h["WARC-Target-URI"] for t, h, _c in recs if t == "response"),
                {
                    h["WARC-Target-URI"]: c
                    for t, h, c in recs
                    if t == "metadata"
                    and c[:8] == b"fetchTim"
                    and h.get("Content-Type") == "application/warc-fields"
                },
                len((out / "indexes" / "index.cdxj").read_text().splitlines()),
            )
            for path in (out / "warcs").iterdir():
                verify_warc(path)
        linked = {url_of(server, p) for p in site.linked}
    one, two = kept[1], kept[2]
    assert linked <= set(two[0]) and max(two[0].values()) == 1
    assert two[0] == one[0] and two[2] == one[2]
    outlinks = {
        url: {ln for ln in c.splitlines() if ln.startswith(b"outlink")} for url, c in two[1].items()
    }
    assert outlinks == {
        url: {ln for ln in c.splitlines() if ln.startswith(b"outlink")} for url, c in one[1].items()
    }
    assert pids(tmp_path / "out1") == {os.getpid()}
    assert os.getpid() not in pids(tmp_path / "out2"), "the second process wrote the files"


@pytest.mark.parametrize("help_at", [0, 1000], ids=["links found by the crawler", "by the child"])
def test_links_found_by_either_process_reach_the_crawler_and_the_outlinks(
    tmp_path: Path, help_at: int
) -> None:
    """When the child is behind (``help_at`` 0: always), the crawling process finds a page's
    links itself and sends them along: the crawler gets the same links as from the child,
    and the child writes them into the page's metadata record."""
    writer = RotatingWARCWriter(tmp_path, prefix="t")
    writer.open()
    archivist = ArchiveProcess(
        Recorder(writer, strategy="crawl", endpoint=None), follow_nofollow=True, help_at=help_at
    )

    async def run() -> list[str]:
        await archivist.start(lambda: None)
        archived = await archivist.archive(*page("http://h/a.html"))
        with archivist.one_file():
            archivist.stepped(archived.ticket)
        await archivist.close()
        return archived.links

    assert asyncio.run(run()) == ["http://h/next.html", "http://h/i.png"]
    (path,) = tmp_path.glob("*.warc.gz")
    with open(path, "rb") as fh:
        outlinks = [
            line.split()[1]
            for record in ArchiveIterator(fh)
            if record.rec_type == "metadata"
            for line in record.content_stream().read().splitlines()
            if line.startswith(b"outlink:")
        ]
    assert outlinks == [b"http://h/next.html", b"http://h/i.png"]


def test_a_full_file_is_finished_only_once_its_groups_are_committed(tmp_path: Path) -> None:
    """The crash rule of a step batch: with a file full after one group, the next page is
    held (and a commit asked for) until the first page's step has ended; then the file is
    finished and the next group starts a new one."""
    writer = RotatingWARCWriter(tmp_path, prefix="t", max_size=1)
    writer.open()
    archivist = ArchiveProcess(
        Recorder(writer, strategy="crawl", endpoint=None), follow_nofollow=True
    )
    commits: list[int] = []

    async def run() -> None:
        await archivist.start(lambda: commits.append(1))
        first = await archivist.archive(*page("http://h/a.html"))
        assert first.links == ["http://h/next.html", "http://h/i.png"]
        second = asyncio.ensure_future(archivist.archive(*page("http://h/b.html")))
        for _ in range(1000):  # until the child asks for the batch to end (10 s at most)
            if commits:
                break
            await asyncio.sleep(0.01)
        assert commits, "the child asked for the batch to end"
        assert not second.done(), "held: its group would finish a file with an unsettled one"
        assert [p.name.endswith(".open") for p in tmp_path.iterdir()] == [True]
        with archivist.one_file():
            archivist.stepped(first.ticket)
        done = await asyncio.wait_for(second, 10)
        assert done.capture.warc_file != first.capture.warc_file
        finished = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".open"))
        assert finished == [first.capture.warc_file]
        with archivist.one_file():
            archivist.stepped(done.ticket)
        await archivist.close()

    asyncio.run(run())
    writer.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 2 and not any(n.endswith(".open") for n in names)
    with open(tmp_path / names[0], "rb") as fh:
        uris = [
            r.rec_headers["WARC-Target-URI"]
            for r in ArchiveIterator(fh)
            if r.rec_type == "response"
        ]
    assert uris == ["http://h/a.html"]


def test_a_crawl_whose_archiving_process_dies_fails_in_one_line_and_resumes(
    tmp_path: Path,
) -> None:
    site = make_site(tmp_path / "www", pages=30, seed=15)
    out = tmp_path / "out"
    with start_plain_site(site.root, tmp_path / "index.sqlite") as server:
        args = ["harvest", server.url + "/", "--out", str(out), "--mode", "crawl", "--quiet"]
        args += ["--delay-factor", "0", "--crawl-processes", "2"]
        died = subprocess.run(
            [sys.executable, "-m", "tests.killed_harvester", "forked:3", *args],
            capture_output=True,
            timeout=120,
        )
        err = died.stderr.decode()
        assert died.returncode not in (0, -9), err
        assert "archiving process" in err and "Traceback" not in err
        assert len([ln for ln in err.splitlines() if ln.startswith("harvester:")]) == 1, err
        resumed = subprocess.run(
            [sys.executable, "-m", "harvester.cli", *args], capture_output=True, timeout=300
        )
        assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
        linked = {url_of(server, p) for p in site.linked}
    got = Counter(h["WARC-Target-URI"] for t, h, _c in records(out) if t == "response")
    assert linked <= set(got)


def test_crawl_processes_are_one_or_two() -> None:
    with pytest.raises(ValueError, match="crawl_processes must be"):
        load_settings(site_url="http://h/", out=Path("o"), crawl_processes=3, environ={})


def test_groups_the_crawl_never_recorded_stay_in_an_open_file_for_the_next_run(
    tmp_path: Path,
) -> None:
    """A crawl that ends (^C, an error) after the child wrote a group but before its step:
    the file is not finished, so the next run's repair and reconcile find the capture (a
    finished file would keep it out of the state and the page would be archived twice)."""
    writer = RotatingWARCWriter(tmp_path, prefix="t")
    writer.open()
    archivist = ArchiveProcess(
        Recorder(writer, strategy="crawl", endpoint=None), follow_nofollow=True
    )

    async def run() -> str:
        await archivist.start(lambda: None)
        recorded = await archivist.archive(*page("http://h/a.html"))
        with archivist.one_file():
            archivist.stepped(recorded.ticket)
        stopped = asyncio.ensure_future(archivist.archive(*page("http://h/b.html")))
        await asyncio.sleep(0)  # sent; then the crawl stops, its pages in flight cancelled
        stopped.cancel()
        with archivist.one_file():  # the crawler's last commit, on its way out
            pass
        await archivist.close()
        return recorded.capture.warc_file

    name = asyncio.run(run())
    assert [p.name for p in tmp_path.iterdir()] == [name + ".open"]
    repaired = repair_open_files(tmp_path, ends_group)
    found = Recorder(RotatingWARCWriter(tmp_path), strategy="crawl", endpoint=None).reconcile(
        repaired
    )
    assert sorted(url for url, _capture in found) == ["http://h/a.html", "http://h/b.html"]


def test_a_crawl_into_small_files_rotates_at_once(tmp_path: Path) -> None:
    """Each full file waits for its groups' commit, which the child asks for: with a batch
    otherwise committed only every 10 s, the crawl still rotates its many files at once."""
    site = make_site(tmp_path / "www", pages=30, seed=16)
    out = tmp_path / "out"
    with start_plain_site(site.root, tmp_path / "index.sqlite") as server:
        summary = crawl(
            server.url + "/",
            out,
            delay_factor=0.0,
            crawl_processes=2,
            warc_max_size=4000,
            commit_seconds=10.0,
        )
        linked = {url_of(server, p) for p in site.linked}
    assert summary["seconds"] < 10  # type: ignore[operator]
    files = list((out / "warcs").iterdir())
    assert len(files) > 5 and all(p.name.endswith(".warc.gz") for p in files)
    for path in files:
        verify_warc(path)
    got = Counter(h["WARC-Target-URI"] for t, h, _c in records(out) if t == "response")
    assert linked <= set(got) and max(got.values()) == 1
