"""A new base URL on an existing index (server_module.index.rebase): old identifiers are retired as
deleted records, files become new items, and nothing else changes."""

from __future__ import annotations

from pathlib import Path

from server_module.index.fileindex import FileIndex
from server_module.index.snapshot import Selection
from server_module.records import FileRecord
from tests.sites import Manifest, make_site
from tests.test_index import EVERYTHING, T0, Clock, records, refresh

OLD = "http://old.example/site"
NEW = "https://new.example"


def _open(path: Path, site: Manifest, base: str, now: int) -> FileIndex:
    return FileIndex(path, site.root, base, rebase=True, clock=Clock(now)).open()


def _by_id(index: FileIndex) -> dict[str, FileRecord]:
    return {r.identifier: r for r in records(index)}


def test_old_identifiers_become_deleted_records_and_files_new_items(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=10)
    path = tmp_path / "i.sqlite"
    index = _open(path, site, OLD, T0)
    refresh(index)
    (site.root / "index.html").unlink()
    index.close()
    index = _open(path, site, OLD, T0 + 1)
    assert refresh(index).deleted == 1
    index.close()

    index = _open(path, site, NEW, T0 + 5)
    listed = _by_id(index)
    assert refresh(index).changed == 0
    with index.snapshot() as snap:
        assert snap.count() == len(listed)
        assert snap.get(f"{OLD}/index.html") is not None
    index.close()
    old = {i: r for i, r in listed.items() if i.startswith(OLD)}
    new = {i: r for i, r in listed.items() if i.startswith(NEW)}
    gone = f"{OLD}/index.html"
    assert len(old) == len(site.public) and len(new) == len(site.public) - 1
    assert all(r.deleted for r in old.values()) and not any(r.deleted for r in new.values())
    assert old[gone].datestamp == T0 + 1, "a deletion already recorded keeps its datestamp"
    assert {r.datestamp for i, r in old.items() if i != gone} == {T0 + 5}
    assert {r.datestamp for r in new.values()} == {T0 + 5}
    assert {i.replace(NEW, OLD, 1) for i in new} == set(old) - {gone}


def test_changing_back_revives_the_old_identifiers(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=6)
    path = tmp_path / "i.sqlite"
    with FileIndex(path, site.root, OLD, clock=Clock(T0)) as index:
        refresh(index)
        first = _by_id(index)
    _open(path, site, NEW, T0 + 5).close()
    index = _open(path, site, OLD, T0 + 9)
    listed = _by_id(index)
    with index.snapshot() as snap:
        assert len(snap.records(Selection(start=T0 + 9), limit=EVERYTHING)) == 2 * len(first)
    index.close()
    assert {i for i, r in listed.items() if not r.deleted} == set(first)
    assert {i.replace(OLD, NEW, 1) for i in first} == {i for i, r in listed.items() if r.deleted}
    assert {r.datestamp for r in listed.values()} == {T0 + 9}
