"""Records mode with ``--linked none`` killed mid-list: the state never names a DIDL record
that is not in the WARC files, and a rerun finishes every item.

With ``--linked none`` a page is stored in the commit that settles the oldest group the
builder made (``records/ingest.py``): the group's records are written and flushed before that
commit, and the page's own records before it too.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harvester.archive.repair import verify_warc
from tests.test_harvest import records as warc_records
from tests.test_records import PRES, ingest, item_didls, kill_mid_list, start


def test_sigkill_mid_list_without_linked_resources_then_rerun_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    with start(items=40, delay=0.3) as server:
        kill_mid_list(server, out, "--linked", "none")
        with sqlite3.connect(out / "state.sqlite") as db:
            before = dict(
                db.execute("SELECT identifier, didl_record_id FROM items WHERE status='archived'")
            )
        assert 8 <= len(before) < 40  # killed mid-list
        code, summary = ingest(server, out, capsys, "--linked", "none")
    assert code == 0 and summary["records"] == 40 - len(before)
    for path in (out / "warcs").glob("*.warc.gz"):
        verify_warc(path)
    bodies = {h["WARC-Record-ID"]: b for k, h, b in warc_records(out) if k == "metadata"}
    with sqlite3.connect(out / "state.sqlite") as db:
        rows = db.execute("SELECT identifier, status, didl_record_id FROM items").fetchall()
    assert {status for _i, status, _r in rows} == {"archived"} and len(rows) == 40
    for identifier, _status, record_id in rows:  # each names its item's record, on disk
        assert f"<pres:identifier>{identifier}</pres:identifier>".encode() in bodies[record_id]
    now = {identifier: record_id for identifier, _status, record_id in rows}
    assert {identifier: now[identifier] for identifier in before} == before  # kept as they were
    ids = {d.findtext(f".//{PRES}identifier") for d in item_didls(out)}
    assert ids == {f"oai:repo.test:{n}" for n in range(40)}
