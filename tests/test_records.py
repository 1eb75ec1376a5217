"""Records mode end to end: a repository with ``oai:`` identifiers, landing pages and files,
and each quirk of real repositories, over loopback sockets; compared with what sickle lists."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from sickle import Sickle

from harvester.archive.didl import OaiHeaderInfo, Provenance, WarcPointer
from harvester.archive.repair import verify_warc
from harvester.cli import main
from harvester.records.itemdidl import LinkedCapture, item_didl
from harvester.run.runlog import RunLog
from tests.pgcluster import PGCluster
from tests.schemas import assert_valid
from tests.servers import RunningServer, start_wsgi
from tests.test_harvest import records as warc_records

PRES = "{urn:coop-archive:preservation:1.0}"
DIDL = "{urn:mpeg:mpeg21:2002:02-DIDL-NS}"
DC = "{http://purl.org/dc/elements/1.1/}"


def start(**quirks: object) -> RunningServer:
    return start_wsgi("tests.records_repo:repository", quirks, ready_path="/_log")


def ingest(
    server: RunningServer, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    """``harvester harvest URL/oai --out OUT --json``: the exit code and the summary ({} if
    none was printed)."""
    code = main(["harvest", server.url + "/oai", "--out", str(out), "--json", "--quiet", *extra])
    lines = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}


def item_didls(out: Path) -> list[etree._Element]:
    docs = [
        etree.fromstring(body)
        for kind, _h, body in warc_records(out)
        if kind == "metadata" and body.startswith(b"<?xml")
    ]
    return [d for d in docs if d.find(f".//{PRES}metadata") is not None]


def canonical(element: etree._Element) -> bytes:
    """Exclusive C14N without whitespace-only text: what both parsers agree on."""
    parser = etree.XMLParser(remove_blank_text=True)
    again = etree.fromstring(etree.tostring(element, with_tail=False), parser)
    return etree.tostring(again, method="c14n", exclusive=True)


def server_log(server: RunningServer) -> list[str]:
    with urllib.request.urlopen(server.url + "/_log", timeout=5) as response:
        return list(json.load(response))


def poke(server: RunningServer, path: str) -> None:
    urllib.request.urlopen(server.url + path, timeout=5).close()


def test_records_landing_pages_and_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start() as server:
        code, summary = ingest(server, tmp_path / "c", capsys)
        listed = list(Sickle(server.url + "/oai").ListRecords(metadataPrefix="oai_dc"))
    assert code == 0 and summary["mode"] == "records"
    (run,) = RunLog(tmp_path / "c").runs()
    assert (run.mode, run.exit) == ("records", 0), "runs.jsonl names the mode the run found"
    assert summary["records"] == 12
    assert summary["linked"] == {"fetched": 36, "unchanged": 0, "failed": 0}
    records = warc_records(tmp_path / "c")
    responses = {h["WARC-Target-URI"]: (h, body) for kind, h, body in records if kind == "response"}
    pages = [u for u in responses if "verb=ListRecords" in u]
    assert len(pages) == 3  # every list response, under its real request URL
    assert not any("localhost" in u for u in responses)  # another registrable domain
    didls = item_didls(tmp_path / "c")
    by_id = {d.findtext(f".//{PRES}oaiHeader/{PRES}identifier"): d for d in didls}
    # what sickle lists from the same repository is what the item records hold
    assert sorted(by_id) == sorted(r.header.identifier for r in listed)
    for rec in listed:
        didl = by_id[rec.header.identifier]
        assert_valid(didl)
        assert didl.findtext(f".//{PRES}datestamp") == rec.header.datestamp
        assert [s.text for s in didl.iterfind(f".//{PRES}setSpec")] == rec.header.setSpecs
        assert didl.findtext(f".//{PRES}metadata//{DC}title") == rec.metadata["title"][0]
        refs = [r.get("ref") for r in didl.iterfind(f"{DIDL}Item/{DIDL}Component/{DIDL}Resource")]
        n = rec.header.identifier.rsplit(":", 1)[1]
        # the PDF is named only by citation_pdf_url, the CSV only by a Signposting header
        assert sorted(refs) == sorted(
            f"{server.url}{p}" for p in (f"/items/{n}", f"/files/{n}.pdf", f"/files/{n}.csv")
        )
        for component in didl.iterfind(f"{DIDL}Item/{DIDL}Component"):
            ref = component.find(f"{DIDL}Resource").get("ref")
            header, body = responses[ref]
            assert (
                component.find(f".//{PRES}warcRecord").get("recordId") == header["WARC-Record-ID"]
            )
            sha1 = component.findtext(f".//{PRES}digest[@algorithm='sha1']")
            assert sha1 == hashlib.sha1(body).hexdigest()
            assert (
                header["WARC-Payload-Digest"]
                == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
            )


def test_rerun_takes_only_what_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with start() as server:
        assert ingest(server, tmp_path / "c", capsys)[0] == 0
        before = len(server_log(server))
        code, summary = ingest(server, tmp_path / "c", capsys)
        assert code == 0 and summary["records"] == 0 and summary["linked"]["fetched"] == 0
        poke(server, "/_change/4")
        poke(server, "/_delete/7")
        code, summary = ingest(server, tmp_path / "c", capsys)
        log = server_log(server)[before:]
    assert code == 0
    assert (summary["records"], summary["deleted"]) == (1, 1)
    # the landing page and the CSV changed; the PDF answers 304 and becomes a revisit
    assert summary["linked"] == {"fetched": 2, "unchanged": 1, "failed": 0}
    lists = [line for line in log if "verb=ListRecords" in line]
    assert lists and all(
        "from=" in line and "T" not in line.split("from=")[1][:11] for line in lists
    )
    fetched = [line for line in log if line.startswith(("/items/", "/files/"))]
    assert sorted(fetched) == ["/files/4.csv", "/files/4.pdf", "/items/4"]  # nothing else touched
    didls = item_didls(tmp_path / "c")
    assert sum(d.findtext(f".//{PRES}identifier") == "oai:repo.test:4" for d in didls) == 2
    notes = [
        b for k, _h, b in warc_records(tmp_path / "c") if k == "metadata" and b"pres:deletion" in b
    ]
    assert len(notes) == 1 and b"oai:repo.test:7" in notes[0]


@pytest.mark.parametrize("form", ["seconds", "date"])
def test_503_with_retry_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    with start(retry_after=form) as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "none")
        log = server_log(server)
    assert code == 0 and summary["records"] == 12
    assert sum("verb=ListRecords" in line and "resumptionToken" not in line for line in log) == 2


def test_expired_token_relists_from_the_lists_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(expire_page=2) as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "none")
        log = [line for line in server_log(server) if "verb=ListRecords" in line]
    assert code == 0 and summary["records"] == 12
    # page 2's token is refused: the list is read again from its own bound (none: a first run)
    assert log[3] == "/oai?verb=ListRecords&metadataPrefix=oai_dc"
    ids = Counter(d.findtext(f".//{PRES}identifier") for d in item_didls(tmp_path / "c"))
    assert len(ids) == 12 and set(ids.values()) == {1}


def test_repeating_token_stops_with_nothing_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(repeat_page=1) as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "none")
    assert code == 3 and summary["lists_failed"] == 1
    assert any("repeats" in e for e in summary["errors"])
    ids = Counter(d.findtext(f".//{PRES}identifier") for d in item_didls(tmp_path / "c"))
    assert set(ids.values()) == {1} and len(ids) == 8
    pages = Counter(
        h["WARC-Target-URI"] for k, h, _b in warc_records(tmp_path / "c") if k == "response"
    )
    assert set(pages.values()) == {1}


def test_broken_record_is_kept_raw_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(broken=5) as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "none")
    assert code == 3 and summary["records"] == 11 and summary["broken"] == 1
    assert any("oai:repo.test:5" in e for e in summary["errors"])
    pages = [b for k, h, b in warc_records(tmp_path / "c") if k == "response"]
    assert any(b"<dc:title>Broken & 5</dc:title>" in b for b in pages)


def test_wrong_complete_list_size_is_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(size_offset=5) as server:
        code, _summary = ingest(server, tmp_path / "c", capsys, "--linked", "none")
    assert code == 0
    assert (
        "completeListSize said 17, 12 records arrived"
        in (tmp_path / "c" / "harvest.log").read_text()
    )


def test_failed_repository_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start() as server:
        code = main(
            [
                "harvest",
                server.url + "/oai",
                "--out",
                str(tmp_path / "c"),
                "--quiet",
                "--metadata-prefix",
                "marc21",
            ]
        )
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("harvester: no list page read from")
    assert "cannotDisseminateFormat: only oai_dc" in err[-1]


def test_didl_export_includes_item_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start() as server:
        ingest(server, tmp_path / "c", capsys, "--linked", "none")
    assert main(["didl", str(tmp_path / "c"), "--to", str(tmp_path / "x")]) == 0
    exported = [etree.parse(str(p)).getroot() for p in (tmp_path / "x").rglob("*.xml")]
    items = [e for e in exported if e.find(f".//{PRES}metadata") is not None]
    assert len(items) == 12


def test_repository_on_the_oaipmh_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from oaipmh_scythe import Scythe

    with start_wsgi(
        "tests.oaipmh_repo:oaipmh_repository", {"items": 25}, ready_path="/oai"
    ) as server:
        code, summary = ingest(server, tmp_path / "c", capsys)
        with Scythe(server.url + "/oai") as scythe:
            listed = list(scythe.list_records(metadata_prefix="oai_dc"))
    assert code == 0 and summary["mode"] == "records"
    assert (summary["records"], summary["deleted"]) == (24, 1)
    assert summary["linked"] == {"fetched": 48, "unchanged": 0, "failed": 0}  # pages and PDFs
    didls = {d.findtext(f".//{PRES}identifier"): d for d in item_didls(tmp_path / "c")}
    live = [r for r in listed if not r.header.deleted]
    assert sorted(didls) == sorted(r.header.identifier for r in live)
    for rec in live:
        didl = didls[rec.header.identifier]
        assert didl.findtext(f".//{PRES}datestamp") == rec.header.datestamp
        ours = didl.find(f".//{PRES}metadata/*")
        assert canonical(ours) == canonical(rec.xml.find(".//{*}metadata/*"))
        refs = sorted(
            r.get("ref") for r in didl.iterfind(f"{DIDL}Item/{DIDL}Component/{DIDL}Resource")
        )
        n = rec.header.identifier.rsplit(":", 1)[1]
        assert refs == [f"{server.url}/files/{n}.pdf", f"{server.url}/items/{n}"]


def test_sigkill_mid_ingest_then_rerun_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    with start(items=40, delay=0.3) as server:
        kill_mid_list(server, out)
        assert 8 <= settled(out) < 40  # killed mid-list
        code, _summary = ingest(server, out, capsys)
    assert code == 0
    for path in (out / "warcs").glob("*.warc.gz"):
        verify_warc(path)
    ids = {d.findtext(f".//{PRES}identifier") for d in item_didls(out)}
    assert ids == {f"oai:repo.test:{n}" for n in range(40)}
    with sqlite3.connect(out / "state.sqlite") as db:
        assert db.execute("SELECT status, COUNT(*) FROM items GROUP BY status").fetchall() == [
            ("archived", 40)
        ]


def kill_mid_list(server: RunningServer, out: Path, *extra: str) -> None:
    """Run the harvester on ``server`` into ``out`` and SIGKILL it once the state knows of
    eight items' DIDL records (or after a minute)."""
    argv = [sys.executable, "-m", "harvester.cli", "harvest", server.url + "/oai",
            "--out", str(out), "--quiet", *extra]  # fmt: skip
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and settled(out) < 8:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(10)


def settled(out: Path) -> int:
    """Items whose DIDL record the state knows of (0 before the state exists)."""
    try:
        with sqlite3.connect(f"file:{out / 'state.sqlite'}?mode=ro", uri=True, timeout=1) as db:
            return int(
                db.execute("SELECT COUNT(*) FROM items WHERE status='archived'").fetchone()[0]
            )
    except sqlite3.Error:
        return 0


def test_linked_landing_fetches_no_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start() as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "landing")
        fetched = [line for line in server_log(server) if line.startswith(("/items/", "/files/"))]
    assert code == 0 and summary["records"] == 12
    assert sorted(fetched) == sorted(f"/items/{n}" for n in range(12))


def test_linked_scope_widens_to_another_domain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start() as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "landing")
        before = server_log(server).count("/cited")
        code, summary = ingest(server, tmp_path / "d", capsys, "--linked", "landing",
                               "--linked-scope", "localhost")  # fmt: skip
        after = server_log(server).count("/cited")
    assert code == 0 and (before, after) == (0, 1)  # fetched once, linked by every record
    assert summary["linked"] == {"fetched": 13, "unchanged": 0, "failed": 0}


def test_from_and_until_in_the_repositorys_granularity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start() as server:
        window = ("--from", "2024-05-02T10:00:00Z", "--until", "2024-05-03")
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "none", *window)
        lists = [line for line in server_log(server) if "verb=ListRecords" in line]
    assert code == 0 and summary["records"] == 6  # items 3-8: two days of three
    assert "from=2024-05-02&" in lists[0] and "until=2024-05-03" in lists[0]


def test_item_didl_is_the_documents_layout_byte_for_byte() -> None:
    """The item DIDL's text, made once per run where items share it, is the document
    ``harvester.archive.didl`` lays out from the same statements."""
    endpoint = "http://repo.test/oai?a=b&c=d\u00e9"
    provenance = Provenance(
        "agent", "1.0", datetime(2024, 5, 1, tzinfo=UTC), endpoint, "oai-records"
    )
    pointer = WarcPointer("<urn:uuid:1>", "a.warc.gz", 10, 20, "response")
    linked = [
        LinkedCapture("http://repo.test/f 1.pdf", "application/pdf", "a" * 40, "b" * 64, pointer)
    ]
    formats = [
        ("oai_dc", b'<dc xmlns="http://purl.org/dc/elements/1.1/">x &amp; y</dc>'),
        ("mods", '<m xmlns="http://www.loc.gov/mods/v3">\u00e9</m>'.encode()),
    ]
    for identifier, specs in (("oai:repo.test:1", ()), ("oai:r:<&>\u00e9", ("a", "b&c"))):
        oai = OaiHeaderInfo(identifier, "2024-05-01", specs, endpoint)
        made = item_didl(oai, formats, linked, provenance)
        laid_out = item_didl(oai, formats, linked, provenance, document_id="urn:x")
        assert re.sub(rb'DIDLDocumentId="[^"]+"', b'DIDLDocumentId="urn:x"', made) == laid_out
        assert_valid(made)


def test_linked_none_builds_records_in_a_second_process_incrementally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without linked resources the DIDL records are made by the builder process: the same
    records, deletion notes and state as the in-process path."""
    out = tmp_path / "c"
    with start() as server:
        code, first = ingest(server, out, capsys, "--linked", "none")
        poke(server, "/_change/4")
        poke(server, "/_delete/7")
        code_again, again = ingest(server, out, capsys, "--linked", "none")
    assert (code, first["records"], first["deleted"]) == (0, 12, 0)
    assert (code_again, again["records"], again["deleted"]) == (0, 1, 1)
    for path in (out / "warcs").glob("*.warc.gz"):
        verify_warc(path)
    didls = item_didls(out)
    for didl in didls:
        assert_valid(didl)
        assert didl.find(f"{DIDL}Item/{DIDL}Component") is None  # nothing linked
    ids = Counter(d.findtext(f".//{PRES}identifier") for d in didls)
    assert ids == Counter({f"oai:repo.test:{n}": 2 if n == 4 else 1 for n in range(12)})
    notes = [b for k, _h, b in warc_records(out) if k == "metadata" and b"pres:deletion" in b]
    assert len(notes) == 1 and b"oai:repo.test:7" in notes[0]
    assert_valid(notes[0])
    with sqlite3.connect(out / "state.sqlite") as db:
        rows = db.execute("SELECT status, COUNT(*) FROM items GROUP BY status").fetchall()
    assert sorted(rows) == [("archived", 11), ("deleted", 1)]


def test_an_item_listed_again_on_the_next_page_keeps_its_newer_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An item changed while the list is read comes again on the next page: both versions'
    records are written, and the state names the newer one, whatever the builder's pace."""
    out = tmp_path / "c"
    with start(relist=1) as server:
        code, summary = ingest(server, out, capsys, "--linked", "none")
    assert code == 0 and summary["records"] == 13
    bodies = {h["WARC-Record-ID"]: b for k, h, b in warc_records(out) if k == "metadata"}
    titles = [
        etree.fromstring(b).findtext(f".//{DC}title")
        for b in bodies.values()
        if b.startswith(b"<?xml") and b"oai:repo.test:1<" in b
    ]
    assert titles == ["Item 1", "Item 1, changed"]
    with sqlite3.connect(out / "state.sqlite") as db:
        rows = db.execute("SELECT status, didl_record_id FROM items").fetchall()
        ((status, record_id),) = db.execute(
            "SELECT status, didl_record_id FROM items WHERE identifier='oai:repo.test:1'"
        ).fetchall()
    assert {s for s, _r in rows} == {"archived"} and len(rows) == 12
    assert status == "archived"
    assert etree.fromstring(bodies[record_id]).findtext(f".//{DC}title") == "Item 1, changed"


def test_records_mode_on_a_postgresql_state_and_again_incrementally(
    pg_cluster: PGCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Repository ingest keeps its items in the state of either backend (issue 16: every
    mode works on both)."""
    state = pg_cluster.new_database()
    with start() as server:
        code, first = ingest(server, tmp_path / "c", capsys, "--linked", "none", "--state", state)
        again, second = ingest(server, tmp_path / "c", capsys, "--linked", "none", "--state", state)
    assert code == 0 and first["records"] == 12 and len(item_didls(tmp_path / "c")) == 12
    assert again == 0 and second["records"] == 0


def test_a_url_that_answers_identify_is_the_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository that answers OAI-PMH under every path (as one routing by prefix does):
    the URL given is the endpoint, not ``URL/oai`` below it."""
    with start_wsgi("tests.oai_apps:provider", {"pages": 1, "per_page": 2}) as server:
        argv = ["harvest", server.url + "/repo", "--out", str(tmp_path / "out"), "--json"]
        code = main([*argv, "--quiet", "--mode", "records", "--linked", "none"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and summary["records"] == 1, summary
    assert summary["endpoint"] == server.url + "/repo"
