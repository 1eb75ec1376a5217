"""Redirects on the OAI-PMH get path: each hop archived under its own URI (issue 12, #4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvester.storage.sqlite.state import SQLiteState
from tests.conftest import start_provider
from tests.servers import RunningServer
from tests.test_harvest import harvest, warc_records

PAGES = ("old.html", "new.html", "chain.html", "end.html", "away.html", "plain.html")
REDIRECTS = {
    "/old.html": "/new.html",  # one hop, relative Location
    "/chain.html": "/middle",  # two hops: the middle is not a file
    "/middle": "/end.html",
    "/away.html": "http://127.0.0.2:9/elsewhere",  # another host: never followed
}


@pytest.fixture()
def moved(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "www"
    root.mkdir()
    for name in PAGES:
        (root / name).write_text(f"<html><body>{name}</body></html>\n")
    app = "tests.redirecting_provider:redirecting"
    with start_provider(root, tmp_path / "fi.sqlite", app=app, redirects=REDIRECTS) as server:
        yield server


def responses(out: Path) -> list[tuple[str, int, str | None, bytes, str]]:
    """(WARC-Target-URI, HTTP status, Location, body, WARC-Record-ID) of every response."""
    found = []
    for rec in warc_records(out):
        if rec.rec_type == "response":
            uri = rec.rec_headers.get_header("WARC-Target-URI")
            status = int(rec.http_headers.get_statuscode())
            location = rec.http_headers.get_header("Location")
            body, record_id = rec.content_stream().read(), rec.rec_headers["WARC-Record-ID"]
            found.append((uri, status, location, body, record_id))
    return found


def test_each_hop_is_archived_under_its_own_uri(moved: RunningServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = harvest(moved, out)
    base = moved.url
    got = responses(out)
    by_uri: dict[str, list[tuple[int, str | None, bytes]]] = {}
    ids: dict[tuple[str, int], str] = {}
    for uri, status, location, body, record_id in got:
        by_uri.setdefault(uri, []).append((status, location, body))
        ids[uri, status] = record_id
    assert by_uri[f"{base}/old.html"] == [(301, "/new.html", b"moved to /new.html\n")]
    assert by_uri[f"{base}/chain.html"] == [(301, "/middle", b"moved to /middle\n")]
    assert by_uri[f"{base}/middle"] == [(301, "/end.html", b"moved to /end.html\n")]
    away = "http://127.0.0.2:9/elsewhere"
    assert by_uri[f"{base}/away.html"] == [(301, away, f"moved to {away}\n".encode())]
    assert away not in by_uri, "an out-of-scope target is recorded as the redirect only"
    assert {hop[1] for hop in got if hop[0] != f"{base}/"} == {200, 301}
    assert [hop[0] for hop in by_uri[f"{base}/"]] == [404]  # the seed: no home page here
    for name in ("new.html", "end.html", "plain.html"):
        assert (200, None, f"<html><body>{name}</body></html>\n".encode()) in by_uri[
            f"{base}/{name}"
        ]
    assert summary["failed"] == 0
    with SQLiteState(out / "state.sqlite") as state:
        # the listed URL's state points at the start of its chain: its own response
        for name, status in (("old.html", 301), ("chain.html", 301), ("plain.html", 200)):
            res = state.get(f"{base}/{name}")
            assert res is not None and res.status == "archived", name
            assert res.record_id == ids[f"{base}/{name}", status], name
