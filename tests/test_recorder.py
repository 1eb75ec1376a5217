"""The recorder's groups survive a crash whole or not at all (issue 12, #18).

A crawl group is a response, its request, the page's outlinks record and its DIDL record. The
WARC file of a killed run is cut at every boundary between the records of a group, then
repaired and reconciled as the next run does: no record of the broken group may remain, and
reconcile reports exactly the groups that are whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.archive.recorder import Recorder
from harvester.archive.repair import repair_open_files
from harvester.archive.warc import RotatingWARCWriter
from harvester.http.fetch import Fetcher
from harvester.http.limits import fetch_settings
from harvester.run import harvest as harvest_module
from harvester.settings import defaults
from harvester.storage.protocol import Resource
from harvester.storage.sqlite.state import SQLiteState
from tests.servers import RunningServer, start_wsgi

SITE = "http://127.0.0.1/"
QUIET = replace(defaults(), ignore_robots=True, max_retries=0)


@pytest.fixture(scope="module")
def site() -> Iterator[RunningServer]:
    with start_wsgi("tests.apps:hello", {"greeting": "page"}) as server:
        yield server


def fetch(urls: list[str]):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        async with Fetcher(fetch_settings(QUIET)) as fetcher:
            return [await fetcher.fetch(url) for url in urls]

    return asyncio.run(main())


def resources(tmp_path: Path, urls: list[str]) -> list[Resource]:
    with SQLiteState(tmp_path / "state.sqlite") as state:
        state.add_pending(SITE, urls)
        found = [state.get(url) for url in urls]
    assert all(found)
    return [r for r in found if r is not None]


def write_two_groups(tmp_path: Path, server: RunningServer) -> tuple[bytes, list[str]]:
    """The bytes of a ``.open`` file holding two crawl groups, as a crash would leave it."""
    urls = [f"{server.url}/one", f"{server.url}/two"]
    results = fetch(urls)
    writer = RotatingWARCWriter(tmp_path / "live", prefix="t")
    writer.open()
    recorder = Recorder(writer, strategy="crawl", endpoint=None)
    for res, result in zip(resources(tmp_path, urls), results, strict=True):
        recorder.fetched(res, result, outlinks=[f"{server.url}/a", f"{server.url}/b"])
    path = writer.current_path
    assert path is not None
    return path.read_bytes(), urls


def record_ends(data: bytes, path: Path) -> list[tuple[str, int]]:
    path.write_bytes(data)
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        return [(r.rec_type, it.get_record_offset() + it.get_record_length()) for r in it]


def survivors(path: Path) -> list[tuple[str, str, str | None, str | None]]:
    """(type, record id, Refers-To, Concurrent-To) of every record of the repaired file."""
    found = []
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            h = rec.rec_headers
            found.append(
                (
                    rec.rec_type,
                    h.get_header("WARC-Record-ID"),
                    h.get_header("WARC-Refers-To"),
                    h.get_header("WARC-Concurrent-To"),
                )
            )
    return found


def test_a_crash_at_any_record_boundary_leaves_only_whole_groups(
    site: RunningServer, tmp_path: Path
) -> None:
    data, urls = write_two_groups(tmp_path, site)
    ends = record_ends(data, tmp_path / "whole.warc.gz")
    assert [kind for kind, _ in ends].count("response") == 2
    first_group_end = ends[4][1]  # warcinfo + four records
    for cut in [end for _kind, end in ends[4:]]:
        crashed = tmp_path / f"cut-{cut}"
        crashed.mkdir()
        (crashed / "t-0.warc.gz.open").write_bytes(data[:cut])
        repaired = repair_open_files(crashed, group_end=harvest_module._ends_group)
        assert len(repaired) == 1
        records = survivors(repaired[0])
        ids = {rid for _k, rid, _r, _c in records}
        for kind, _rid, refers_to, concurrent_to in records:
            assert refers_to is None or refers_to in ids, f"orphan {kind} at cut {cut}"
            assert concurrent_to is None or concurrent_to in ids, f"orphan {kind} at cut {cut}"
        whole = cut == ends[-1][1]
        assert repaired[0].stat().st_size == (cut if whole else first_group_end), cut
        recorder = Recorder(RotatingWARCWriter(crashed), strategy="crawl", endpoint=None)
        found = [url for url, _capture in recorder.reconcile(repaired)]
        assert found == (urls if whole else urls[:1]), cut
