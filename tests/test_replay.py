"""End to end: a collection on its second day replays in pywb, every capture as served.

A small site is harvested through the CLI as the README shows it; then one page changes and
another is only touched (new mtime, same bytes), and the harvest runs again; a crawl runs
twice over an unchanged site; strategy ``didl`` reruns over a touched file; records mode
reruns over a repository whose PDF answers 304; a crawl is SIGKILLed and run again. A listed
file gone before its GET and a linked page never there are 404s, archived. After each run
the status and bytes the site serves are noted; at the end pywb (``tests/pywb.py``), with
the collection's own CDXJ and with its own indexer, must answer every capture's URL at that
capture's time with that status (200, or the 404) and those bytes. FastWARC checks every
record's digests, every record keeps the WARC 1.1 rules of issue 32 (``tests/warcrules.py``),
and the collection's index is cdxj-indexer's.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cdxj_indexer.main import write_cdx_index
from lxml import etree
from warcio.archiveiterator import ArchiveIterator

from coop_common.exitcode import ExitCode
from harvester.archive.didl import DIDL_NS, PRES_NS
from harvester.cli import main
from harvester.run.runlog import RunLog
from server_module.index.fileindex import FileIndex
from tests.conftest import start_provider
from tests.pywb import replay
from tests.servers import RunningServer, start_wsgi
from tests.warcrules import broken_rules, fastwarc_check

PAGES = {
    "index.html": b'<html><body><a href="page.html">p</a> <a href="touched.html">t</a> '
    b'<a href="style.css">s</a> <a href="missing.html">gone</a></body></html>',
    "page.html": b"<html><body>first version</body></html>",
    "touched.html": b"<html><body>the same bytes every day</body></html>",
    "style.css": b"body { color: black }",
}


@dataclass
class Served:
    """What the site served at each capture: record ID -> (URL, status, bytes)."""

    out: Path
    server: RunningServer
    root: Path
    start: str = "/"  # the path the harvest is pointed at
    seen: set[str] = field(default_factory=set)
    expected: dict[str, tuple[str, str, int, bytes]] = field(default_factory=dict)

    def run(self, *flags: str, code: ExitCode | set[ExitCode] = ExitCode.OK) -> None:
        """One harvest through the CLI, then note what each new capture should replay."""
        _next_second()
        argv = ["harvest", self.server.url + self.start, "--out", str(self.out), "--quiet", *flags]
        assert main(argv) in (code if isinstance(code, set) else {code})
        _next_second()
        self.note()

    def note(self) -> None:
        """What each capture not seen yet should replay: what the site serves now."""
        for rec_id, url, date in captures(self.out):
            if rec_id not in self.seen:
                self.seen.add(rec_id)
                self.expected[rec_id] = (url, date, *self.now(url))

    def now(self, url: str) -> tuple[int, bytes]:
        """The status and bytes the site serves for ``url`` now (unchanged since the run)."""
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def captured(self) -> dict[str, set[int]]:
        """Each URL captured, with the statuses it was captured with."""
        found: dict[str, set[int]] = {}
        for url, _stamp, status, _body in self.expected.values():
            found.setdefault(url, set()).add(status)
        return found


def _next_second() -> None:
    """Wait (bounded) for the clock's second to turn: captures of two runs then differ in
    their 14-digit timestamps, which is what replay looks them up by."""
    start = int(time.time())
    deadline = time.monotonic() + 3
    while int(time.time()) == start and time.monotonic() < deadline:
        time.sleep(0.02)


def captures(out: Path) -> Iterator[tuple[str, str, str]]:
    """(record ID, URL, 14-digit time) of every capture that replay lists: response and
    revisit records of the site's resources (not the OAI-PMH exchanges)."""
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                url = rec.rec_headers.get_header("WARC-Target-URI") or ""
                if rec.rec_type not in ("response", "revisit", "resource") or "/oai" in url:
                    continue
                date = rec.rec_headers.get_header("WARC-Date")
                stamp = "".join(c for c in date if c.isdigit())[:14]
                yield rec.rec_headers.get_header("WARC-Record-ID"), url, stamp


def assert_replays(served: Served, tmp: Path) -> None:
    """Every capture, with both indexes, at its time: its status and the bytes served then."""
    for index in ("ours", "pywb"):
        with replay(served.out / "warcs", tmp / f"pywb-{index}", index=index) as wayback:
            wrong = []
            for url, stamp, status, body in served.expected.values():
                got = wayback.fetch(url, stamp)
                if (got.status, got.body) != (status, body):
                    wrong.append((index, url, stamp, got.status, got.body[:60], status))
            assert not wrong, wrong


def assert_wellformed(out: Path) -> None:
    """FastWARC's digests, the WARC 1.1 rules, and an index that is cdxj-indexer's lines of
    the same files, less the records that are no captures (DIDL records, elided pages)."""
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    for path in warcs:
        assert fastwarc_check(path) == [], path
        assert broken_rules(path) == [], path
    reference = io.StringIO()
    write_cdx_index(reference, [str(w) for w in warcs], {"sort": True})
    theirs = set(reference.getvalue().splitlines())
    ours = {line for f in (out / "indexes").glob("*.cdxj") for line in f.read_text().splitlines()}
    assert ours <= theirs
    for line in theirs - ours:
        fields = json.loads(line.split(" ", 2)[2])
        assert fields["mime"] == "application/xml" or "/oai?" in fields.get("url", ""), line


def warc_records(out: Path) -> list[tuple[str, dict[str, str], bytes]]:
    """(WARC-Type, WARC headers, block) of every record, in file order."""
    found = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                found.append((rec.rec_type, dict(rec.rec_headers.headers), rec.raw_stream.read()))
    return found


def kinds_of(out: Path, url: str) -> list[str]:
    """The types of ``url``'s capture records, in order."""
    return [
        kind
        for kind, head, _block in warc_records(out)
        if head.get("WARC-Target-URI") == url and kind in ("response", "revisit", "resource")
    ]


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[tuple[Path, RunningServer]]:
    root = tmp_path / "www"
    root.mkdir()
    for name, body in PAGES.items():
        (root / name).write_bytes(body)
    with start_provider(root, tmp_path / "index.sqlite") as server:
        yield root, server


def _change(root: Path, server: RunningServer) -> None:
    """A new version of ``page.html``, a new mtime for ``touched.html``; the provider's
    index refreshed (as its watcher would, a second or two later)."""
    (root / "page.html").write_bytes(b"<html><body>second version</body></html>")
    later = time.time() + 5
    os.utime(root / "touched.html", (later, later))
    _refresh(root, server)


def _refresh(root: Path, server: RunningServer) -> None:
    with FileIndex(root.parent / "index.sqlite", root, server.url) as index:
        index.refresh()


def test_listed_get_rerun_replays_every_capture(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A listed file gone before its GET (404) is archived."""
    root, server = site
    (root / "gone.html").write_bytes(b"<html>listed, then removed</html>")
    _refresh(root, server)
    (root / "gone.html").unlink()  # the provider lists it still; its GET answers 404
    served = Served(tmp_path / "get", server, root)
    served.run(code=ExitCode.PARTIAL)
    _change(root, server)  # the refresh notes gone.html's deletion too
    served.run()
    captured = served.captured()
    assert captured[server.url + "/gone.html"] == {404}
    touched = server.url + "/touched.html"
    assert kinds_of(served.out, touched) == ["response", "revisit"]
    assert captured[touched] == {200}
    assert_revisit_didl(served.out, touched)
    assert_seed(served, server.url + "/")
    assert_wellformed(served.out)
    assert_replays(served, tmp_path)


def assert_seed(served: Served, home: str) -> None:
    """The start URL (the site's root, which no list names) was captured by both runs, the
    second a revisit of the first, each to replay as the home page (issue 32, item 4)."""
    assert kinds_of(served.out, home) == ["response", "revisit"]
    assert {
        (status, body) for url, _t, status, body in served.expected.values() if url == home
    } == {(200, PAGES["index.html"])}
    assert_revisit_didl(served.out, home)


def run_counts(out: Path) -> list[dict[str, object]]:
    """The counts of each run in ``runs.jsonl``, in order."""
    return [run.counts for run in RunLog(out).runs()]


def test_the_seed_is_no_listed_resource(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The listed counts are the listed files' alone: the seed has a field of its own."""
    root, server = site
    served = Served(tmp_path / "seed", server, root)
    served.run()
    served.run()
    first, second = run_counts(served.out)
    assert (first["listed"], first["fetched"], first["known"]) == (len(PAGES),) * 3
    assert (first["archived"], first["seed"]) == (len(PAGES), "fetched")
    assert (second["fetched"], second["unchanged"], second["seed"]) == (0, 0, "unchanged")
    assert second["known"] == len(PAGES)


def assert_revisit_didl(out: Path, url: str) -> None:
    """The DIDL record of ``url``'s revisit names it as a revisit, with the original's
    MIME type (issue 32, item 2)."""
    records = warc_records(out)
    (revisit_id,) = [
        h["WARC-Record-ID"]
        for k, h, _b in records
        if k == "revisit" and h["WARC-Target-URI"] == url
    ]
    (didl,) = [
        b for k, h, b in records if k == "metadata" and h.get("WARC-Refers-To") == revisit_id
    ]
    root = etree.fromstring(didl)
    ns = {"pres": PRES_NS, "didl": DIDL_NS}
    (pointer,) = root.iterfind(".//pres:warcRecord", ns)
    assert pointer.get("type") == "revisit"
    (mime,) = root.iterfind(".//pres:mimeType", ns)
    assert mime.get("declared") == "text/html"
    (resource,) = root.iterfind(".//didl:Resource", ns)
    assert resource.get("mimeType") == "text/html"


def test_recrawl_replays_every_capture(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root, server = site
    served = Served(tmp_path / "crawl", server, root)
    served.run("--mode", "crawl", code=ExitCode.PARTIAL)  # missing.html's first 404
    served.run("--mode", "crawl")  # its second: gone, settled (docs/collection.md)
    _change(root, server)
    served.run("--mode", "crawl")
    captured = served.captured()
    assert captured[server.url + "/missing.html"] == {404}  # linked, never there
    assert len([u for u, *_ in served.expected.values() if u.endswith("/touched.html")]) == 3
    assert_wellformed(served.out)
    assert_replays(served, tmp_path)


def test_didl_strategy_rerun_replays_every_capture(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root, server = site
    served = Served(tmp_path / "didl", server, root)
    served.run("--oai-strategy", "didl")
    _change(root, server)
    served.run("--oai-strategy", "didl")
    touched = server.url + "/touched.html"
    assert kinds_of(served.out, touched) == ["response", "revisit"]  # not a second copy
    assert_revisit_didl(served.out, touched)
    assert_seed(served, server.url + "/")
    assert_carried_notes(served.out, server.url + "/")
    assert_wellformed(served.out)
    assert_replays(served, tmp_path)


def assert_carried_notes(out: Path, seed: str) -> None:
    """Every record carried in an ``oai_didl`` record (all but the list pages and the
    ``seed``, fetched) has a concurrent metadata note naming the list page its head and bytes
    came from, and the provider's address."""
    records = warc_records(out)
    notes = {
        h["WARC-Concurrent-To"]: (h, b)
        for k, h, b in records
        if k == "metadata" and "WARC-Concurrent-To" in h
    }
    carried = [
        (h, notes.get(h["WARC-Record-ID"]))
        for k, h, _b in records
        if k in ("response", "revisit", "resource")
        and "/oai?" not in h["WARC-Target-URI"]
        and h["WARC-Target-URI"] != seed
    ]
    assert carried
    for head, note in carried:
        assert note is not None, head
        assert note[0]["WARC-Date"] == head["WARC-Date"]
        assert note[0]["WARC-Target-URI"] == head["WARC-Target-URI"]
        assert note[1].startswith(b"rebuilt-from: oai_didl\r\nsource-uri: http://"), note[1]
        assert head["WARC-IP-Address"] == "127.0.0.1"


def test_records_mode_rerun_replays_every_linked_capture(tmp_path: Path) -> None:
    """Records mode's linked files: a rerun after one item changed finds its PDF unchanged
    (a 304: a revisit), which replays as the PDF."""
    with start_wsgi("tests.records_repo:repository", {}, ready_path="/_log") as server:
        served = Served(tmp_path / "repo", server, tmp_path, start="/oai")
        served.run()
        urllib.request.urlopen(server.url + "/_change/4", timeout=5).close()
        served.run()
        pdf = server.url + "/files/4.pdf"
        assert kinds_of(served.out, pdf) == ["response", "revisit"]
        assert_wellformed(served.out)
        assert_replays(served, tmp_path)


def test_interrupted_crawl_replays_every_capture(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A crawl SIGKILLed after its second page, then run again (which repairs the file the
    kill left open), then once more after a change: every capture replays."""
    root, server = site
    served = Served(tmp_path / "killed", server, root)
    _next_second()
    argv = ["harvest", server.url + "/", "--out", str(served.out), "--quiet", "--mode", "crawl"]
    killed = subprocess.run(
        [sys.executable, "-m", "tests.killed_harvester", "2", *argv],
        capture_output=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert list((served.out / "warcs").glob("*.open"))
    # missing.html's first 404 is this run's, or the killed run's (then this one's is its
    # second, gone); by the run after, it is gone whichever it was
    served.run("--mode", "crawl", code={ExitCode.PARTIAL, ExitCode.OK})
    _change(root, server)
    served.run("--mode", "crawl")
    assert not list((served.out / "warcs").glob("*.open"))
    assert_wellformed(served.out)
    assert_replays(served, tmp_path)


def test_watch_revisits_replay(tmp_path: Path) -> None:
    """``harvester watch`` over pages that never change: its revisits (304s) replay."""
    quiet = {"rates": [0.0, 0.0], "seed": 3, "log": str(tmp_path / "log")}
    with start_wsgi("tests.changing_site:changing_site", quiet) as server:
        out = tmp_path / "watched"
        argv = [sys.executable, "-m", "harvester.cli", "watch", server.url + "/", "--out"]
        argv += [str(out), "--rate", "20", "--min-interval", "0.2", "--quiet", "--max-time", "3"]
        done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        (collection,) = [p.parent for p in out.glob("*/warcs")]
        served = Served(collection, server, tmp_path)
        served.note()
        assert "revisit" in kinds_of(collection, server.url + "/p0")
        assert_wellformed(collection)
        assert_replays(served, tmp_path)
