"""The file index over real temporary sites: what is listed, datestamps, deletions, reading."""

from __future__ import annotations

import fcntl
import gc
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server_module.index import fileindex as index_module
from server_module.index.fileindex import (
    FileIndex,
    IndexSchemaError,
    RefreshStats,
    default_index_path,
)
from server_module.index.filemeta import extract_title
from server_module.index.scan import Scanner
from server_module.index.snapshot import Selection
from server_module.records import FileRecord, make_identifier
from tests.sites import NON_UTF8_NAME, Manifest, make_site

BASE = "http://example.org/site"
T0 = 1_700_000_000
EVERYTHING = 10**9


class Clock:
    """A clock the test sets by hand."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now + 0.5


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Treat every file as settled: tests that count hashes must not see racy re-reads."""
    monkeypatch.setattr(index_module, "RACY_WINDOW_NS", -(10**12))


@pytest.fixture
def site(tmp_path: Path) -> Manifest:
    return make_site(tmp_path / "site", pages=40, seed=3)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def idx(tmp_path: Path, site: Manifest, clock: Clock) -> Iterator[FileIndex]:
    with FileIndex(default_index_path(site.root), site.root, BASE + "/", clock=clock) as index:
        yield index


def records(index: FileIndex) -> list[FileRecord]:
    with index.snapshot() as snap:
        return snap.records(limit=EVERYTHING)


def by_path(index: FileIndex) -> dict[str, FileRecord]:
    return {os.fsdecode(r.relpath): r for r in records(index)}


def refresh(index: FileIndex) -> RefreshStats:
    stats = index.refresh()
    assert stats is not None
    return stats


def change_ctime(path: Path, action: Callable[[], object]) -> None:
    """Run ``action`` until the file's ctime differs (it may land in the same clock tick)."""
    ctime = path.stat().st_ctime_ns
    action()
    while path.stat().st_ctime_ns == ctime:
        time.sleep(0.005)
        action()


def write(root: Path, rel: str, data: bytes, mtime: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# -- what is listed ---------------------------------------------------------------------------


def test_indexes_exactly_the_public_files(idx: FileIndex, site: Manifest) -> None:
    stats = refresh(idx)
    listed = set(by_path(idx))
    assert listed == site.public
    assert not listed & site.hidden
    assert stats.scanned == stats.added == len(site.public)


def test_identifiers_are_ascii_urls_of_the_path(idx: FileIndex, site: Manifest) -> None:
    refresh(idx)
    for record in records(idx):
        assert record.identifier.isascii()
        assert record.identifier.startswith(BASE + "/")
        assert "//" not in record.identifier.removeprefix("http://")
        assert unquote_to_bytes(record.identifier[len(BASE) + 1 :]) == record.relpath
    odd = by_path(idx)[f"files/{NON_UTF8_NAME}"]
    assert odd.identifier == f"{BASE}/files/caf%E9.txt"
    assert by_path(idx)["docs/with space.html"].identifier == f"{BASE}/docs/with%20space.html"
    assert by_path(idx)["docs/hash#tag.html"].identifier == f"{BASE}/docs/hash%23tag.html"


segment = st.binary(min_size=1, max_size=30).filter(lambda b: b"/" not in b)


@given(st.lists(segment, min_size=1, max_size=4), st.sampled_from([BASE, BASE + "/"]))
def test_identifier_round_trips_any_bytes(parts: list[bytes], base: str) -> None:
    relpath = b"/".join(parts)
    identifier = make_identifier(base, relpath)
    assert identifier.isascii()
    assert identifier.startswith(BASE + "/")
    assert unquote_to_bytes(identifier[len(BASE) + 1 :]) == relpath


file_name = st.binary(min_size=1, max_size=40).filter(
    lambda b: b"/" not in b and b"\0" not in b and not b.startswith(b".") and not b.endswith(b"~")
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(file_name, min_size=1, max_size=5))
def test_any_file_name_is_indexed_and_found_again(names: set[bytes]) -> None:
    names = {n for n in names if not n.startswith(b"#") and not n.endswith((b".swp", b".swo"))}
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.fsencode(tmp), b"site")
        os.mkdir(root)
        for name in names:
            with open(os.path.join(root, name), "wb") as fh:
                fh.write(name)
        with FileIndex(Path(tmp) / "index.sqlite", os.fsdecode(root), BASE) as index:
            refresh(index)
            with index.snapshot() as snap:
                for name in names:
                    record = snap.get(make_identifier(BASE, name))
                    assert record is not None and record.relpath == name
                    assert snap.get_by_relpath(name) == record
                assert snap.count() == len(names)


def test_excluded_names_and_folders_are_not_listed(tmp_path: Path, site: Manifest) -> None:
    for rel in ("foo~", "docs/a.swp", "docs/b.swo", "#draft#", "#tmp#/inside.html", "x.bak"):
        write(site.root, rel, b"junk")
    exclude = (*index_module.DEFAULT_EXCLUDES, "*.bak")
    with FileIndex(tmp_path / "i.sqlite", site.root, BASE, exclude=exclude) as index:
        refresh(index)
        assert set(by_path(index)) == site.public


def test_fifo_is_not_listed(idx: FileIndex, site: Manifest) -> None:
    os.mkfifo(site.root / "docs" / "pipe.html")
    stats = refresh(idx)  # must not block on opening the fifo either
    assert set(by_path(idx)) == site.public
    assert stats.scanned == len(site.public)


def test_symlinks_inside_the_root_are_followed_outside_not(
    idx: FileIndex, site: Manifest, tmp_path: Path
) -> None:
    (site.root / "docs" / "alias.html").symlink_to(site.root / "index.html")
    (site.root / "mirror").symlink_to(site.root / "news")
    outside = tmp_path / "elsewhere"
    write(outside, "leak.html", b"<title>leak</title>")
    (site.root / "out").symlink_to(outside)
    (site.root / "docs" / "loop").symlink_to(site.root)
    (site.root / "news" / "2024").mkdir(parents=True, exist_ok=True)
    (site.root / "news" / "2024" / "back").symlink_to(site.root / "news")
    (site.root / "peek").symlink_to(site.root / ".git" / "config")
    (site.root / "dangling").symlink_to(site.root / "nowhere")
    refresh(idx)
    listed = by_path(idx)
    news = {p for p in site.public if p.startswith("news/")}
    expected = site.public | {"docs/alias.html"} | {"mirror/" + p[5:] for p in news}
    assert set(listed) == expected
    assert listed["docs/alias.html"].sha256 == listed["index.html"].sha256


def test_index_inside_the_docroot_is_not_listed(site: Manifest, clock: Clock) -> None:
    with FileIndex(site.root / "oai.sqlite", site.root, BASE, clock=clock) as index:
        refresh(index)
        assert records(index)  # keeps a reader connection open, so the -wal file stays
        write(site.root, "new.txt", b"new")
        refresh(index)
        assert {p.name for p in site.root.iterdir()} >= {"oai.sqlite", "oai.sqlite-wal"}
        assert set(by_path(index)) == site.public | {"new.txt"}


def test_default_index_path_is_a_hidden_sibling(tmp_path: Path) -> None:
    assert default_index_path(tmp_path / "www/") == tmp_path / ".www.oai-index.sqlite"


# -- datestamps -------------------------------------------------------------------------------


@pytest.mark.usefixtures("settled")
def test_second_refresh_hashes_nothing_and_keeps_datestamps(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    refresh(idx)
    before = records(idx)
    clock.now += 100
    stats = refresh(idx)
    assert (stats.hashed, stats.added, stats.changed, stats.deleted) == (0, 0, 0, 0)
    assert stats.unchanged == len(site.public)
    assert records(idx) == before
    assert {r.datestamp for r in before} == {T0}


def test_recent_files_are_hashed_again_but_not_restamped(idx: FileIndex, clock: Clock) -> None:
    refresh(idx)
    before = records(idx)
    clock.now += 100
    stats = refresh(idx)  # the files were written just now: their stat is not yet trusted
    assert stats.hashed == stats.unchanged == len(before)
    assert records(idx) == before


def test_copy_with_old_mtime_gets_the_refresh_time(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    refresh(idx)
    write(site.root, "docs/restored.pdf", b"%PDF-1.4 old", mtime=T0 - 10 * 365 * 86400)
    clock.now = T0 + 3600
    stats = refresh(idx)
    assert stats.added == 1
    record = by_path(idx)["docs/restored.pdf"]
    assert record.datestamp == T0 + 3600
    assert record.mtime_ns == (T0 - 10 * 365 * 86400) * 10**9
    with idx.snapshot() as snap:
        assert [h[0] for h in snap.headers(Selection(start=T0 + 1), limit=10)] == [
            record.identifier
        ]


@pytest.mark.parametrize("window", [None, 0])
def test_in_place_edit_with_restored_mtime_is_a_new_version(
    idx: FileIndex,
    site: Manifest,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    window: int | None,
) -> None:
    path = write(site.root, "docs/note.txt", b"version one", mtime=T0 - 86400)
    if window is not None:  # without the racy window, ctime alone must reveal the edit
        monkeypatch.setattr(index_module, "RACY_WINDOW_NS", window)
    refresh(idx)
    old = by_path(idx)["docs/note.txt"]
    path.write_bytes(b"version two")
    change_ctime(path, lambda: os.utime(path, ns=(old.mtime_ns, old.mtime_ns)))
    clock.now += 60
    stats = refresh(idx)
    new = by_path(idx)["docs/note.txt"]
    assert stats.changed == 1
    assert (new.size, new.mtime_ns) == (old.size, old.mtime_ns)
    assert new.sha256 != old.sha256 and new.sha1 != old.sha1
    assert new.datestamp == T0 + 60


def test_same_tick_edit_is_caught_by_the_racy_window(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    path = write(site.root, "docs/fast.txt", b"aaaa")
    refresh(idx)
    stat = path.stat()
    path.write_bytes(b"bbbb")  # may well land in the same timestamp tick as the first write
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    clock.now += 1
    refresh(idx)
    assert by_path(idx)["docs/fast.txt"].datestamp == T0 + 1


@pytest.mark.usefixtures("settled")
def test_metadata_only_change_keeps_the_datestamp(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    refresh(idx)
    before = by_path(idx)["index.html"]
    page = site.root / "index.html"
    change_ctime(page, lambda: page.chmod(0o600))  # content and mtime stay
    clock.now += 60
    stats = refresh(idx)
    assert (stats.hashed, stats.changed, stats.added) == (1, 0, 0)
    assert by_path(idx)["index.html"] == before
    assert refresh(idx).hashed == 0  # the new ctime was stored


def test_deletion_is_persistent_and_a_return_is_a_new_version(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    refresh(idx)
    gone = by_path(idx)["images/pic0.png"]
    data = (site.root / "images/pic0.png").read_bytes()
    (site.root / "images/pic0.png").unlink()
    clock.now += 10
    assert refresh(idx).deleted == 1
    dead = by_path(idx)["images/pic0.png"]
    assert dead.deleted and dead.datestamp == T0 + 10
    assert (dead.mime, dead.sha256, dead.identifier) == (gone.mime, gone.sha256, gone.identifier)
    clock.now += 10
    assert refresh(idx).deleted == 0  # already deleted rows are left alone
    assert by_path(idx)["images/pic0.png"].datestamp == T0 + 10
    with idx.snapshot() as snap:
        assert snap.count(Selection(set_spec="image:png")) == len(
            [p for p in site.public if ".png" in p]
        )
        assert gone.identifier in {
            h[0] for h in snap.headers(Selection(set_spec="image"), limit=100)
        }
    (site.root / "images/pic0.png").write_bytes(data)
    clock.now += 10
    assert refresh(idx).added == 1
    back = by_path(idx)["images/pic0.png"]
    assert not back.deleted and back.datestamp == T0 + 30 and back.sha256 == gone.sha256


def test_hidden_or_excluded_later_counts_as_deleted(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    refresh(idx)
    (site.root / "files/empty.txt").rename(site.root / "files/.empty.txt")
    (site.root / "index.html").rename(site.root / "index.html~")
    clock.now += 5
    stats = refresh(idx)
    assert (stats.deleted, stats.added) == (2, 0)
    assert by_path(idx)["index.html"].deleted


def test_missing_docroot_fails_instead_of_deleting(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    refresh(idx)
    site.root.rename(site.root.with_name("unmounted"))
    clock.now += 1
    with pytest.raises(FileNotFoundError):
        idx.refresh()
    assert not any(r.deleted for r in records(idx))


def test_datestamps_never_go_backwards(idx: FileIndex, site: Manifest, clock: Clock) -> None:
    clock.now = T0 + 1000
    refresh(idx)
    clock.now = T0  # the clock was set back
    write(site.root, "late.txt", b"late")
    (site.root / "index.html").unlink()
    refresh(idx)
    listed = by_path(idx)
    assert listed["late.txt"].datestamp == T0 + 1000
    assert listed["index.html"].datestamp == T0 + 1000
    with idx.snapshot() as snap:
        assert snap.earliest_datestamp() == T0 + 1000


def test_kill_during_refresh_leaves_the_old_state(idx: FileIndex, site: Manifest) -> None:
    refresh(idx)
    before = records(idx)
    for i in range(50):
        write(site.root, f"more/{i}.txt", b"x" * i)
    (site.root / "index.html").unlink()
    # The counts are kept after every row is written, before the commit.
    script = (
        "import os, signal, sys\n"
        "from server_module.index import fileindex as index, writer as indexwriter\n"
        "def kill(conn):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "indexwriter._store_counts = kill\n"
        "with index.FileIndex(sys.argv[1], sys.argv[2], sys.argv[3]) as i:\n"
        "    i.refresh()\n"
    )
    args = [sys.executable, "-c", script, str(idx.path), str(site.root), BASE]
    done = subprocess.run(args, cwd=Path(__file__).parents[1], capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr
    with sqlite3.connect(idx.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert records(idx) == before


# -- reading ----------------------------------------------------------------------------------


def staggered(idx: FileIndex, site: Manifest, clock: Clock) -> None:
    """An index whose rows carry several datestamps, with deletions among them."""
    refresh(idx)
    for step in range(1, 4):
        clock.now = T0 + step * 100
        write(site.root, f"step{step}/a.html", b"<title>a</title>")
        write(site.root, f"step{step}/b.txt", b"b")
        (site.root / sorted(site.public)[step]).unlink(missing_ok=True)
        refresh(idx)


@pytest.mark.parametrize(
    ("start", "until", "set_spec"),
    [(None, None, None), (T0 + 100, None, None), (None, T0 + 200, "text"), (T0, T0, "text:html")],
)
@pytest.mark.parametrize("limit", [1, 7, 1000])
def test_keyset_pages_list_every_row_once_in_order(
    idx: FileIndex,
    site: Manifest,
    clock: Clock,
    start: int | None,
    until: int | None,
    set_spec: str | None,
    limit: int,
) -> None:
    staggered(idx, site, clock)
    want = [
        (r.identifier, r.datestamp, int(r.deleted), r.mime)
        for r in sorted(records(idx), key=lambda r: (r.datestamp, r.identifier))
        if (start is None or r.datestamp >= start)
        and (until is None or r.datestamp <= until)
        and (set_spec is None or set_spec in r.set_specs)
    ]
    pages: list[list[tuple[str, int, int, str]]] = []
    after: tuple[int, str] | None = None
    with idx.snapshot() as snap:
        whole = Selection(start, until, set_spec)
        total = snap.count(whole)
        while page := snap.headers(replace(whole, after=after), limit=limit):
            pages.append(page)
            after = (page[-1][1], page[-1][0])
            assert len(pages) <= total, "pagination does not advance"
        full = snap.records(whole, limit=EVERYTHING)
    assert all(len(page) <= limit for page in pages)
    assert [row for page in pages for row in page] == want
    assert total == len(want) > 0
    assert [(r.identifier, r.datestamp) for r in full] == [(h[0], h[1]) for h in want]


def test_sets_follow_the_mime_hierarchy(idx: FileIndex, site: Manifest) -> None:
    refresh(idx)
    with idx.snapshot() as snap:
        text = snap.headers(Selection(set_spec="text"), limit=EVERYTHING)
        html = snap.headers(Selection(set_spec="text:html"), limit=EVERYTHING)
        specs = snap.set_specs()
        assert snap.count(Selection(set_spec="text")) == len(text)
        assert snap.count(Selection(set_spec="nothing")) == 0
        assert snap.headers(Selection(set_spec="text:htm"), limit=10) == []
    assert {h[3] for h in text} == {"text/html", "text/plain", "text/css"}
    assert {h[3] for h in html} == {"text/html"}
    assert len(html) == len([p for p in site.public if p.endswith(".html")])
    assert specs == sorted(specs)
    assert {"text", "text:html", "text:plain", "image:png", "application:pdf"} <= set(specs)
    assert "application:zip" in specs and all(":" in s or "/" not in s for s in specs)


def test_point_lookups_and_empty_index(tmp_path: Path, site: Manifest) -> None:
    with FileIndex(tmp_path / "i.sqlite", site.root, BASE) as index:
        with index.snapshot() as snap:
            assert snap.earliest_datestamp() is None
            assert snap.set_specs() == []
        refresh(index)
        with index.snapshot() as snap:
            record = snap.get(f"{BASE}/docs/what%3F.html")
            assert record is not None and record.relpath == b"docs/what?.html"
            assert snap.get_by_relpath(b"files/caf\xe9.txt") is not None
            assert snap.get(f"{BASE}/docs/what?.html") is None
            assert snap.get_by_relpath(b"files/escape.txt") is None


def test_snapshot_keeps_its_view_during_a_refresh(
    idx: FileIndex, site: Manifest, clock: Clock
) -> None:
    refresh(idx)
    before = len(site.public)
    seen: list[int] = []
    opened, refreshed = threading.Event(), threading.Event()

    def reader() -> None:
        with idx.snapshot() as snap:
            seen.append(snap.count())
            opened.set()
            refreshed.wait(30)
            seen.append(snap.count())
            seen.append(len(snap.headers(limit=EVERYTHING)))
        with idx.snapshot() as snap:
            seen.append(snap.count())

    thread = threading.Thread(target=reader)
    thread.start()
    assert opened.wait(30)
    write(site.root, "fresh.txt", b"fresh")
    with FileIndex(idx.path, site.root, BASE, clock=clock) as other:
        clock.now += 1
        assert refresh(other).added == 1
    refreshed.set()
    thread.join(30)
    assert seen == [before, before, before, before + 1]


def test_nested_snapshots_share_one_view(idx: FileIndex) -> None:
    refresh(idx)
    with idx.snapshot() as outer, idx.snapshot() as inner:
        assert inner.count() == outer.count()
    with idx.snapshot() as again:
        assert again.count() > 0


# -- locking and life cycle -------------------------------------------------------------------


def test_a_second_refresh_does_not_run_at_once(idx: FileIndex, site: Manifest) -> None:
    inside, release = threading.Event(), threading.Event()

    def slow_clock() -> float:  # called while the first refresh holds the lock
        inside.set()
        release.wait(30)
        return T0

    results: list[RefreshStats | None] = []
    slow = FileIndex(idx.path, site.root, BASE, clock=slow_clock).open()
    first = threading.Thread(target=lambda: results.append(slow.refresh()))
    first.start()
    assert inside.wait(30)
    assert idx.refresh(blocking=False) is None
    second = threading.Thread(target=lambda: results.append(idx.refresh()))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # the blocking refresh waits for the lock
    release.set()
    first.join(30)
    second.join(30)
    slow.close()
    assert sorted(r.added for r in results if r is not None) == [0, len(site.public)]


def test_lock_file_is_honoured(idx: FileIndex) -> None:
    with open(f"{idx.path}.lock", "w") as other:  # another open file description
        fcntl.flock(other, fcntl.LOCK_EX)
        assert idx.refresh(blocking=False) is None
    assert idx.refresh(blocking=False) is not None


def test_secret_is_made_once(tmp_path: Path, site: Manifest) -> None:
    path = tmp_path / "i.sqlite"
    with FileIndex(path, site.root, BASE) as index:
        secret = index.secret()
    with FileIndex(path, site.root, BASE) as index:
        assert index.secret() == secret
    assert len(secret) == 32
    with FileIndex(tmp_path / "other.sqlite", site.root, BASE) as index:
        assert index.secret() != secret
    with pytest.raises(RuntimeError):
        index.secret()


def test_foreign_schema_version_is_refused(tmp_path: Path, site: Manifest) -> None:
    path = tmp_path / "i.sqlite"
    FileIndex(path, site.root, BASE).open().close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(IndexSchemaError):
        FileIndex(path, site.root, BASE).open()


def test_reading_a_closed_index_fails(idx: FileIndex) -> None:
    idx.close()
    with pytest.raises(RuntimeError), idx.snapshot():
        pass
    with pytest.raises(RuntimeError):
        idx.refresh()


# -- titles -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "title"),
    [
        (b"<html><head><title>Plain</title>", "Plain"),
        (b"<TITLE class='x'>Upper</TiTlE>", "Upper"),
        (b"<title>Fish &amp; Chips &lt;3 &#233;&eacute;</title>", "Fish & Chips <3 éé"),
        (b"<title>\n  spread\tover\r\n lines  </title>", "spread over lines"),
        (b"<title>bell\x07 nul\x00 &#1;x &#xFFFF;y \xef\xbf\xbe</title>", "bell nul x y"),
        (b"<title>bad \xff utf8</title>", "bad \ufffd utf8"),
        (b"<title></title>", None),
        (b"<title>never closed", None),
        (b"<h1>no title</h1>", None),
        (b" " * 70_000 + b"<title>too late</title>", None),
        (b"<title>" + b"a" * 600 + b"</title>", "a" * 500),
    ],
)
def test_title_extraction(head: bytes, title: str | None) -> None:
    assert extract_title(head) == title


def test_titles_only_for_html(idx: FileIndex, site: Manifest) -> None:
    write(site.root, "t.txt", b"<title>not html</title>")
    write(site.root, "t.html", b"<title>Caf\xc3\xa9 &amp; bar\x0b</title>")
    refresh(idx)
    listed = by_path(idx)
    assert listed["t.txt"].title is None
    assert listed["t.html"].title == "Café & bar"
    assert listed["docs/what?.html"].title == "Page what?.html"
    assert listed['docs/amp&lt<quote".html'].title == 'Page amp&lt<quote".html'


# -- the refresh is a merge of two sorted streams ---------------------------------------------

segment = (
    st.lists(
        st.sampled_from([b"a", b"-", b".", b"0", b"_", b"\xc3\xa9", b"\xff"]),
        min_size=1,
        max_size=3,
    )
    .map(b"".join)
    .filter(lambda b: not b.startswith(b"."))
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.lists(segment, min_size=1, max_size=3).map(tuple), min_size=1, max_size=12))
def test_the_walk_is_in_byte_order_of_relative_paths(paths: set[tuple[bytes, ...]]) -> None:
    """The index's order: ``a-b`` (0x2d) before ``a/x`` (0x2f) before ``a0`` (0x30)."""
    folders = {p[:i] for p in paths for i in range(1, len(p))}
    files = {p for p in paths if p not in folders}  # a name is a file or a folder, not both
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.fsencode(tmp), b"site")
        for parts in files:
            os.makedirs(os.path.join(root, *parts[:-1]), exist_ok=True)
            with open(os.path.join(root, *parts), "wb") as fh:
                fh.write(b"x")
        walked = [found.relpath for found in Scanner(root, (), frozenset()).walk()]
    assert walked == sorted(b"/".join(parts) for parts in files)


def test_a_refresh_merges_changes_that_interleave_in_path_order(
    tmp_path: Path, clock: Clock
) -> None:
    root = tmp_path / "site"
    for rel in ("a-b.html", "a/x.html", "a/y.html", "a0.html", "b/c/d.html", "z.html"):
        write(root, rel, rel.encode())
    with FileIndex(tmp_path / "idx.sqlite", root, BASE, clock=clock) as index:
        refresh(index)
        (root / "a-b.html").unlink()  # before a folder's files in path order
        write(root, "a/w.html", b"new")  # inside it, before a known file
        change_ctime(root / "a/y.html", lambda: write(root, "a/y.html", b"changed"))
        (root / "z.html").unlink()  # the last row: drained after the walk ends
        write(root, "a.html", b"new")  # sorts before a-b.html
        clock.now += 10
        stats = refresh(index)
        rows = {r.relpath: (r.deleted, r.sha256) for r in records(index)}
    assert (stats.added, stats.changed, stats.deleted) == (2, 1, 2)
    with FileIndex(tmp_path / "fresh.sqlite", root, BASE, clock=clock) as fresh:
        refresh(fresh)
        alive = {r.relpath: (r.deleted, r.sha256) for r in records(fresh)}
    assert {rel: row for rel, row in rows.items() if not row[0]} == alive
    assert {rel for rel, row in rows.items() if row[0]} == {b"a-b.html", b"z.html"}


@pytest.mark.usefixtures("settled")
def test_a_refresh_holds_neither_the_tree_nor_the_index(tmp_path: Path, clock: Clock) -> None:
    """Memory grows with the names of the largest folder and with the changes, not with the
    site: 20 folders of 100 files, and one of 2,000."""
    root = tmp_path / "site"
    for folder in range(20):
        for n in range(100):
            write(root, f"f{folder:02}/page{n:03}.html", b"<title>t</title>")
    for n in range(2000):
        write(root, f"big/page{n:04}.html", b"<title>t</title>")
    with FileIndex(tmp_path / "idx.sqlite", root, BASE, clock=clock) as index:
        refresh(index)
        clock.now += 10
        tracemalloc.start()
        try:
            stats = refresh(index)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (stats.scanned, stats.unchanged, stats.hashed) == (4000, 4000, 0)
    # Holding the scanned files and the index rows took about 1 KiB each (4 MB); holding the
    # big folder's scanned entries, about 400 bytes each (0.8 MB); its names, about 60 each.
    assert peak < 400_000, f"{peak:,} bytes"


def test_a_thread_that_ends_closes_its_reader(idx: FileIndex) -> None:
    """A server that starts a thread per request (werkzeug's, ``flask run``) gives each its
    own reader connection; the connection must close with its thread. Kept for the index's
    ``close`` before, 300 short threads left about 900 descriptors open (the database, its
    WAL and shared-memory files), and the provider ran out after a few thousand requests."""

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    counts: list[int] = []

    def read() -> None:
        with idx.snapshot() as snap:
            counts.append(snap.count())

    idx.refresh()
    first = threading.Thread(target=read)  # the files every connection shares are open now
    first.start()
    first.join()
    before = open_fds()
    for _ in range(300):
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
    gc.collect()  # a connection is in a cycle with its statement cache: the collector frees it
    assert open_fds() - before < 10
    read()  # and the index still reads
    assert len(counts) == 302 and min(counts) == max(counts) > 0
