"""An incremental harvest never misses: per-list bounds and positions, failed fetches that
neither pin ``from`` nor retry for ever, and the provider's validators kept for by-value
resources. Each test runs the real provider behind ``tests/watched_provider.py``."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import requests

from harvester.cli import main
from harvester.listed.listpage import ELIDED_PROFILE
from harvester.storage.sqlite.state import SQLiteState
from tests.servers import RunningServer, start_wsgi
from tests.sites import Manifest, make_site
from tests.test_harvest import harvest, listed_records, records, refresh, url_of
from tests.watched_provider import read_log

TWO_SETS = ("text:html", "application:pdf")


def _watched(site: Manifest, tmp_path: Path, **options: Any) -> RunningServer:
    kwargs = {
        "log": str(tmp_path / "requests.jsonl"),
        "docroot": str(site.root),
        "base_url": "http://{host}:{port}",
        "index_path": str(tmp_path / "index.sqlite"),
        "refresh_interval": 0,
        "page_size": 9,
        "records_page_size": 9,
        **options,
    }
    return start_wsgi("tests.watched_provider:watched", kwargs, ready_path="/oai?verb=Identify")


def _lists(log: list[dict[str, Any]]) -> list[dict[str, str]]:
    verbs = ("ListIdentifiers", "ListRecords")
    return [e["args"] for e in log if e["path"] == "/oai" and e["args"].get("verb") in verbs]


def test_a_change_between_two_sets_lists_is_archived_by_the_next_run(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=40, seed=5)
    out = tmp_path / "out"
    with _watched(site, tmp_path, change_on_set=["application:pdf", "index.html"]) as server:
        time.sleep(1.1)  # the first list's responseDate is a later second than the index
        harvest(server, out, oai_strategy="didl", sets=TWO_SETS)
        time.sleep(1.1)
        harvest(server, out, oai_strategy="didl", sets=TWO_SETS)
        url = url_of(server, "index.html")
    changed = (site.root / "index.html").read_bytes()
    captured = [
        c
        for t, h, c in records(out)
        if h.get("WARC-Target-URI") == url and t not in ("request", "metadata")
    ]
    assert b"changed between two sets" in changed
    assert captured[-1] == changed, "the change made before the second set's list was missed"


def test_a_crash_in_the_second_sets_list_resumes_that_list_only(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=40, seed=5)
    out = tmp_path / "out"
    sets = ("application:pdf", "text")
    with _watched(site, tmp_path, break_set="text") as server:
        assert main(["harvest", server.url, "--out", str(out), "--quiet", *_set_flags(sets)]) == 1
        before = len(read_log(tmp_path / "requests.jsonl"))
        summary = harvest(server, out, sets=sets)
        again = _lists(read_log(tmp_path / "requests.jsonl")[before:])
    assert again and all("set" not in args for args in again), "a list was started again"
    assert "resumptionToken" in again[0]
    with SQLiteState(out / "state.sqlite") as state:
        counts = state.counts(server.url)
    assert summary["failed"] == 0 and counts == {"archived": summary["known"]}


def _set_flags(sets: tuple[str, ...]) -> list[str]:
    return [flag for spec in sets for flag in ("--set", spec)]


def test_a_failed_fetch_is_retried_with_back_off_then_abandoned(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=40, seed=5)
    out = tmp_path / "out"
    victim = "files/bundle.zip"
    log_path = tmp_path / "requests.jsonl"

    def run(**flags: Any) -> tuple[dict[str, object], list[dict[str, Any]]]:
        before = len(read_log(log_path))
        summary = harvest(server, out, max_attempts=3, **flags)
        return summary, read_log(log_path)[before:]

    def gets(log: list[dict[str, Any]]) -> list[str]:
        return [e["status"] for e in log if e["path"] == "/" + victim]

    # a 403: no answer the failure lifecycle settles as gone (a 404 repeated would be)
    with _watched(site, tmp_path, missing=[victim, 3, 403]) as server:
        time.sleep(2.2)  # the first list starts two seconds after the index was made
        first, log = run(retry_delay=0)
        assert (first["failed"], gets(log)) == (1, ["403"])
        with SQLiteState(out / "state.sqlite") as state:
            res = state.get(url_of(server, victim))
        assert res is not None and res.listed_datestamp
        time.sleep(1.1)
        deferred, log = run(retry_delay=3600)
        since = _lists(log)[0]["from"]
        assert since > res.listed_datestamp, "the failed resource held the listing back"
        assert gets(log) == [] and deferred["failed"] == 0, "retried before its back-off"
        for _attempt in (2, 3):
            _summary, log = run(retry_delay=0)
            assert gets(log) == ["403"]
        final, log = run(retry_delay=0)
        assert gets(log) == [] and final["abandoned"] == 1
        (site.root / victim).write_bytes(b"a newer version")
        refresh(site, tmp_path / "index.sqlite", server)
        time.sleep(1.1)
        newer, log = run(retry_delay=0)
    assert gets(log) == ["200"] and newer["abandoned"] == 0 and newer["fetched"] == 1


def test_didl_keeps_the_providers_validators_for_the_next_conditional_get(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=40, seed=5)
    out = tmp_path / "out"
    log_path = tmp_path / "requests.jsonl"
    with _watched(site, tmp_path) as server:
        url = url_of(server, "index.html")
        served = requests.head(url, timeout=10).headers
        harvest(server, out, oai_strategy="didl")
        time.sleep(1.1)
        os.utime(site.root / "index.html")  # a new mtime, the same bytes: listed again
        refresh(site, tmp_path / "index.sqlite", server)
        before = len(read_log(log_path))
        harvest(server, out, oai_strategy="get")
        log = read_log(log_path)[before:]
    asked = [e for e in log if e["path"] == "/index.html"]
    assert [(e["if_modified_since"], e["if_none_match"], e["status"]) for e in asked] == [
        (served["Last-Modified"], served["ETag"], "304")
    ]
    recs = listed_records(out)
    revisits = [h for t, h, _c in recs if t == "revisit" and h["WARC-Profile"] != ELIDED_PROFILE]
    assert [h["WARC-Target-URI"] for h in revisits] == [url]
    assert revisits[0]["WARC-Profile"].endswith("identical-payload-digest")


SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', '1');
CREATE TABLE sources (site TEXT PRIMARY KEY, endpoint TEXT, granularity TEXT,
    deleted_record TEXT, harvested_until TEXT, list_from TEXT, list_set TEXT, list_token TEXT,
    list_response_date TEXT, list_active INTEGER NOT NULL DEFAULT 0);
CREATE TABLE resources (url TEXT PRIMARY KEY, site TEXT NOT NULL, oai_identifier TEXT,
    listed_datestamp TEXT, archived_datestamp TEXT, set_specs TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL, etag TEXT, last_modified TEXT, payload_digest TEXT, sha1 TEXT,
    sha256 TEXT, http_status INTEGER, record_id TEXT, warc_file TEXT, warc_offset INTEGER,
    warc_length INTEGER, warc_date TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
    updated REAL NOT NULL);
"""


OLD_LIST = ("2020-06-01T09:00:00Z", "text", "a-stale-token", None)  # a list under way


def test_a_schema_1_state_keeps_its_bound_for_the_lists_it_covered(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=20, seed=5)
    out = tmp_path / "out"
    out.mkdir()
    bound = "2020-06-01T10:00:00Z"
    with _watched(site, tmp_path) as server:
        db = sqlite3.connect(out / "state.sqlite")
        db.executescript(SCHEMA_1)
        db.execute(
            "INSERT INTO sources VALUES (?,?,?,?,?,?,?,?,?,1)",
            (
                server.url,
                f"{server.url}/oai",
                "YYYY-MM-DDThh:mm:ssZ",
                "persistent",
                bound,
                *OLD_LIST,
            ),
        )
        db.commit()
        db.close()
        for sets in (("text",), ("text", "image")):
            before = len(read_log(tmp_path / "requests.jsonl"))
            harvest(server, out, sets=sets)
            asked = _lists(read_log(tmp_path / "requests.jsonl")[before:])
            assert "resumptionToken" not in asked[0], "schema 1's list position was resumed"
            firsts = [(a["set"], a.get("from")) for a in asked if "resumptionToken" not in a]
            assert firsts[-1] == (sets[-1], "2020-06-01T09:59:59Z"), "the old bound was lost"
    with SQLiteState(out / "state.sqlite") as state:
        assert state.db.execute("SELECT value FROM meta").fetchone() == ("2",)


def test_a_mod_oai_sites_first_harvest_asks_for_its_list_once(tmp_path: Path) -> None:
    """Whether an endpoint is a mod_oai site or a repository to ingest as records is decided
    on the first page of the harvest's own list: no extra list request to find out."""
    site = make_site(tmp_path / "www", pages=30, seed=3)
    with _watched(site, tmp_path) as server:
        first = harvest(server, tmp_path / "out")
        log = read_log(tmp_path / "requests.jsonl")
    starts = [a for a in _lists(log) if "resumptionToken" not in a]
    assert starts == [{"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"}]
    assert first["failed"] == 0 and first["fetched"] == len(site.public)
    with SQLiteState(tmp_path / "out" / "state.sqlite") as state:
        assert state.items.records_mode(f"{server.url}/oai") is False
