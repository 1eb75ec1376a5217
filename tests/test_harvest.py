"""End to end: the harvester archives a site from the real provider over loopback sockets."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from harvester.archive.repair import verify_warc
from harvester.cli import main
from harvester.listed.listpage import ELIDED_PROFILE
from harvester.run.assembly import build_harvest
from harvester.settings import load_settings
from harvester.storage.protocol import ListKey
from harvester.storage.sqlite.state import SQLiteState
from server_module.index.fileindex import FileIndex
from tests.conftest import start_provider
from tests.faulty_provider import start_faulty
from tests.schemas import assert_valid
from tests.servers import RunningServer
from tests.sites import Manifest, make_site


def url_of(server: RunningServer, rel: str) -> str:
    return f"{server.url}/{quote(os.fsencode(rel), safe='/')}"


def warc_records(out: Path) -> Iterator[ArcWarcRecord]:
    """Every record of the collection ``out``, in file order (read each before the next)."""
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            yield from ArchiveIterator(fh)


def records(out: Path) -> list[tuple[str, dict[str, str], bytes]]:
    """(WARC-Type, WARC headers, content) of every record of the collection, in file order."""
    return [
        (rec.rec_type, dict(rec.rec_headers.headers), rec.content_stream().read())
        for rec in warc_records(out)
    ]


def listed_records(out: Path) -> list[tuple[str, dict[str, str], bytes]]:
    """:func:`records` less the capture groups of the site's root: the start URL every listed
    run captures besides the listed files (``harvester/listed/seed.py``)."""
    found = records(out)
    roots = {h["WARC-Record-ID"] for _t, h, _c in found if _is_root(h.get("WARC-Target-URI"))}
    return [
        (t, h, c)
        for t, h, c in found
        if h.get("WARC-Record-ID") not in roots
        and h.get("WARC-Refers-To") not in roots
        and h.get("WARC-Concurrent-To") not in roots
    ]


def _is_root(uri: str | None) -> bool:
    parts = urlsplit(uri or "")
    return bool(parts.netloc) and parts.path == "/" and not parts.query


def harvest(server: RunningServer, out: Path, **flags: object) -> dict[str, object]:
    settings = load_settings(site_url=server.url, out=out, quiet=True, environ={}, **flags)
    return build_harvest(settings).run().as_dict()


def refresh(site: Manifest, index: Path, server: RunningServer) -> None:
    with FileIndex(index, site.root, server.url) as idx:
        idx.refresh()


@pytest.fixture()
def served(tmp_path: Path):  # type: ignore[no-untyped-def]
    site = make_site(tmp_path / "www", pages=40, seed=5)
    index = tmp_path / "index.sqlite"
    with start_provider(site.root, index, page_size=9) as server:
        yield site, index, server


def test_full_harvest_archives_every_public_file(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, _index, server = served
    summary = harvest(server, tmp_path / "out")
    expected = {url_of(server, p) for p in site.public}
    recs = listed_records(tmp_path / "out")
    responses = [h["WARC-Target-URI"] for t, h, _c in recs if t == "response"]
    assert Counter(responses) == Counter(expected), "each public file exactly once"
    assert summary["listed"] == summary["fetched"] == len(site.public)
    assert summary["coverage"] == 1.0 and summary["failed"] == 0
    assert {url_of(server, p) for p in site.unlinked} <= set(responses)
    by_id = {h["WARC-Record-ID"]: (t, h, c) for t, h, c in recs}
    for kind, headers, content in recs:
        if kind == "request":
            assert by_id[headers["WARC-Concurrent-To"]][0] == "response"
        if kind == "response":
            assert headers["WARC-IP-Address"] == "127.0.0.1"
            assert headers["WARC-Payload-Digest"].startswith("sha1:")
        if kind == "metadata":
            assert "WARC-Target-URI" not in headers
            root = assert_valid(content)
            assert by_id[headers["WARC-Refers-To"]][0] == "response"
            for statement in root.iter("{urn:mpeg:mpeg21:2002:02-DIDL-NS}Statement"):
                for child in statement:
                    if child.tag.startswith("{urn:coop-archive"):
                        assert_valid(child)
    some = url_of(server, sorted(site.public)[0])
    body = next(c for t, h, c in recs if t == "response" and h["WARC-Target-URI"] == some)
    assert body == (site.root / sorted(site.public)[0]).read_bytes()
    for path in (tmp_path / "out" / "warcs").glob("*"):
        assert path.name.endswith(".warc.gz")
        assert verify_warc(path) > 0
    cdx = (tmp_path / "out" / "indexes" / "index.cdxj").read_text()
    assert cdx.count("\n") >= len(site.public)


def test_incremental_fetches_only_the_changes(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, index, server = served
    out = tmp_path / "out"
    harvest(server, out)
    before = len(listed_records(out))
    time.sleep(1.1)
    edited, touched, gone = "docs/with space.html", "index.html", "files/empty.txt"
    (site.root / edited).write_bytes(b"<html><title>new</title></html>")
    os.utime(site.root / touched)  # a new mtime, the same bytes: a 304 revisit
    (site.root / gone).unlink()
    (site.root / "news" / "added.html").write_text("<title>added</title>")
    refresh(site, index, server)
    summary = harvest(server, out)
    new = listed_records(out)[before:]
    fetched = [h["WARC-Target-URI"] for t, h, _c in new if t == "response"]
    assert sorted(fetched) == sorted([url_of(server, edited), url_of(server, "news/added.html")])
    revisits = [h for t, h, _c in new if t == "revisit"]
    assert [h["WARC-Target-URI"] for h in revisits] == [url_of(server, touched)]
    # a 304's revisit holds the stored 200 head, freshened: replay serves it (issue 32)
    assert revisits[0]["WARC-Profile"].endswith("identical-payload-digest")
    assert revisits[0]["WARC-Refers-To-Date"] and revisits[0]["WARC-Refers-To-Target-URI"]
    notes = [c for t, _h, c in new if t == "metadata" and b"deletion" in c]
    assert len(notes) == 1 and url_of(server, gone).encode() in notes[0]
    assert (summary["fetched"], summary["unchanged"], summary["deleted"]) == (2, 1, 1)
    again = harvest(server, out)
    assert (again["fetched"], again["unchanged"], again["deleted"]) == (0, 0, 0)


def test_didl_strategy_stores_carried_resources(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, _index, server = served
    summary = harvest(server, tmp_path / "out", oai_strategy="didl")
    recs = listed_records(tmp_path / "out")
    endpoint = f"{server.url}/oai?"
    carried = {
        h["WARC-Target-URI"]: c
        for t, h, c in recs
        if t == "response" and not h["WARC-Target-URI"].startswith(endpoint)
    }
    assert set(carried) == {url_of(server, p) for p in site.public}
    rel = sorted(site.public)[3]
    assert carried[url_of(server, rel)] == (site.root / rel).read_bytes()
    assert [t for t, _h, _c in recs if t == "resource"] == []
    pages = [h for t, h, _c in recs if t == "revisit"]  # the list pages, carried bytes elided
    assert pages and all(h["WARC-Target-URI"].startswith(endpoint) for h in pages)
    assert {h["WARC-Profile"] for h in pages} == {ELIDED_PROFILE}
    assert summary["coverage"] == 1.0


def test_a_gone_resource_is_recorded_and_retried(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, _index, server = served
    victim = site.root / "files" / "bundle.zip"
    data = victim.read_bytes()
    victim.unlink()  # listed (the index has not seen the deletion) but answers 404
    summary = harvest(server, tmp_path / "out")
    assert summary["failed"] == 1
    victim.write_bytes(data)
    again = harvest(server, tmp_path / "out", retry_delay=0)
    assert again["fetched"] == 1 and again["failed"] == 0


def test_cli_json_summary_and_didl_export(served, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    site, _index, server = served
    out = tmp_path / "out"
    assert main(["harvest", server.url, "--out", str(out), "--json", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["listed"] == len(site.public) and summary["coverage"] == 1.0
    assert main(["didl", str(out), "--to", str(tmp_path / "didl")]) == 0
    exported = sorted((tmp_path / "didl").rglob("*.xml"))
    assert len(exported) == len(site.public) + 1  # and the seed's, the site's root
    assert_valid(exported[0].read_bytes())
    # named from the URL, wget -x style: host+port/path.WARC-Date.xml
    host = server.url.removeprefix("http://").replace(":", "+")
    names = {str(p.relative_to(tmp_path / "didl")).rsplit(".", 2)[0] for p in exported}
    plain = {p for p in site.public if re.fullmatch(r"[\w/.-]+", p, re.ASCII)}
    assert plain and {f"{host}/{p}" for p in plain} <= names


def test_no_provider_is_a_clear_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    with start_provider(tmp_path, tmp_path.parent / "i.sqlite", endpoint="/elsewhere") as server:
        code = main(
            ["harvest", server.url, "--out", str(tmp_path / "out"), "--quiet", "--mode", "oai"]
        )
    assert code == 1
    assert "no OAI-PMH endpoint" in capsys.readouterr().err


def _all_members_decompress(path: Path) -> None:
    with gzip.open(path) as fh:
        while fh.read(1 << 20):
            pass


def kill_while_writing(argv: list[str], warcs: Path, pause: float) -> bool:
    """Start a harvest, SIGKILL it ``pause`` seconds after a WARC file is open; True if the
    kill landed while one was (the run may also finish first, under a fast machine)."""

    def open_files() -> set[Path]:
        return set(warcs.glob("*.open")) if warcs.exists() else set()

    leftovers = open_files()  # an earlier kill's: repaired at start-up, not this run's
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if open_files() - leftovers:
            time.sleep(pause)
            break
        time.sleep(0.01)
    writing = bool(open_files() - leftovers)
    proc.kill()
    proc.wait()
    return writing


@pytest.mark.slow
@pytest.mark.parametrize(("strategy", "processes"), [("get", "1"), ("didl", "1"), ("get", "3")])
def test_sigkill_at_any_moment_then_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str, processes: str
) -> None:
    """With several fetching processes, the SIGKILL of the first takes the others with it."""
    site = make_site(tmp_path / "www", pages=300, seed=9)
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "harvester.cli",
        "harvest",
        "{url}",
        "--out",
        str(out),
        "--quiet",
        "--concurrency",
        "4",
        "--oai-strategy",
        strategy,
        "--fetch-processes",
        processes,
    ]
    # Both strategies mark many resources archived with one commit (a page of records, or up
    # to commit_every fetches), each commit's groups in one file: rotate often, so that kills
    # land around commits and finished files too.
    monkeypatch.setenv("HARVESTER_WARC_MAX_SIZE", "60000")
    with start_provider(
        site.root, tmp_path / "index.sqlite", page_size=25, records_page_size=25
    ) as server:
        argv = [a.replace("{url}", server.url) for a in cmd]
        interrupted = [kill_while_writing(argv, out / "warcs", pause) for pause in (0.0, 0.1, 0.3)]
        assert any(interrupted), "no kill landed while a WARC file was open"
        assert subprocess.run(argv, capture_output=True, timeout=300).returncode == 0
        expected = {url_of(server, p) for p in site.public}
        endpoint = f"{server.url}/oai?"
    responses = Counter(
        h["WARC-Target-URI"]
        for t, h, _c in listed_records(out)
        if t in ("response", "resource") and not h["WARC-Target-URI"].startswith(endpoint)
    )
    assert set(responses) == expected, "no holes"
    assert max(responses.values()) == 1, "no duplicate response records"
    for path in (out / "warcs").iterdir():
        assert path.suffix == ".gz", f"left over: {path.name}"
        verify_warc(path)
        _all_members_decompress(path)
        check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", str(path)])
        assert check.returncode == 0


def test_refused_token_restarts_the_list(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=40, seed=5)
    with start_faulty(site.root, tmp_path, "token-refused-once") as server:
        summary = harvest(server, tmp_path / "out")
    assert summary["coverage"] == 1.0 and summary["fetched"] == len(site.public)


@pytest.mark.parametrize("fault", ["truncated-second-page", "entity-second-page"])
def test_bad_xml_is_a_clear_error_and_the_state_stays(tmp_path: Path, fault: str, capsys) -> None:  # type: ignore[no-untyped-def]
    site = make_site(tmp_path / "www", pages=40, seed=5)
    out = tmp_path / "out"
    with start_faulty(site.root, tmp_path, fault) as server:
        assert main(["harvest", server.url, "--out", str(out), "--quiet"]) == 1
        error = capsys.readouterr().err
    assert error.startswith("harvester: ") and error.count("\n") == 1
    assert (
        ("DOCTYPE" in error) if fault.startswith("entity") else ("XML" in error or "xml" in error)
    )
    with SQLiteState(out / "state.sqlite") as state:
        position = state.lists.position(ListKey(f"{server.url}/oai", None, "oai_dc"))
    assert position.harvested_until is None
    assert position.state == "active" and position.token  # resumes at page 2 next time


def test_no_changes_is_not_an_error(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _site, _index, server = served
    out = tmp_path / "out"
    harvest(server, out)
    time.sleep(1.1)
    assert main(["harvest", server.url, "--out", str(out), "--quiet"]) == 0


def test_oversized_resource_is_truncated(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, _index, server = served
    big = site.root / "files" / "big.bin"
    big.write_bytes(os.urandom(300_000))
    refresh(site, _index, server)
    harvest(server, tmp_path / "out", max_size=100_000)
    recs = records(tmp_path / "out")
    kind, headers, body = next(
        r for r in recs if r[1].get("WARC-Target-URI", "").endswith("big.bin")
    )
    assert kind == "response" and headers["WARC-Truncated"] == "length"
    assert body == big.read_bytes()[:100_000]


def test_a_resource_changed_after_listing_is_detected(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, _index, server = served
    target = site.root / "docs" / "with space.html"
    target.write_bytes(b"<title>changed after the index saw it</title>")  # no refresh
    later = time.time() + 30  # as if written after the list began
    os.utime(target, (later, later))
    out = tmp_path / "out"
    summary = harvest(server, out)
    assert summary["changed_during"] == 1
    with SQLiteState(out / "state.sqlite") as state:
        res = state.get(url_of(server, "docs/with space.html"))
    assert res is not None and res.status == "archived"


def test_a_failure_inside_a_batch_keeps_the_steps_before_it(tmp_path: Path) -> None:
    """``batch`` only shares commits: each step is whole, as a group flushed to disk is."""
    site = "http://example.org"
    with SQLiteState(tmp_path / "state.sqlite") as state:
        state.add_pending(site, [f"{site}/a", f"{site}/b"])
        with pytest.raises(RuntimeError), state.batch():
            state.mark_failed(f"{site}/a", "first step")
            raise RuntimeError("the second step fails")
        with pytest.raises(RuntimeError), state.transaction():
            state.mark_failed(f"{site}/b", "undone")
            raise RuntimeError("a transaction undoes everything")
    with SQLiteState(tmp_path / "state.sqlite") as state:
        assert state.counts(site) == {"failed": 1, "pending": 1}
