"""Records mode against the quirks real repositories have, as the project's quirky test
repository (:mod:`tests.records_repo`) plays them: InvenioRDM's 422 errors and out-of-order
pages, DOAJ's newest-first lists, a responseDate in +05:45, a garbage earliestDatestamp, a
header without identifier, a 403, odd metadata formats (issue 33). Each runs the
``harvester`` command as the README shows it."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from harvester.cli import main
from tests.test_records import PRES, ingest, item_didls, poke, server_log, start


def ids_archived(out: Path) -> Counter[str | None]:
    return Counter(d.findtext(f".//{PRES}identifier") for d in item_didls(out))


def list_bound(out: Path) -> list[tuple[str | None, str | None]]:
    with sqlite3.connect(out / "state.sqlite") as db:
        return list(db.execute("SELECT harvested_until, list_from FROM lists"))


@pytest.mark.parametrize("order", ["newest-first", "shuffled"])
def test_expired_token_in_an_unsorted_list_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], order: str
) -> None:
    """DOAJ lists newest first; InvenioRDM's second page held records older than the
    first's newest. A restart from the newest datestamp seen would skip them."""
    with start(order=order, expire_page=1, error_status=422) as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "none")
    assert (code, summary["records"], summary["lists_failed"]) == (0, 12, 0)
    ids = ids_archived(tmp_path / "c")
    assert len(ids) == 12 and set(ids.values()) == {1}


def test_a_restart_refused_too_fails_the_list_and_keeps_its_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    with start(items=16, error_status=422) as server:
        assert ingest(server, out, capsys, "--linked", "none")[0] == 0
        bound = list_bound(out)
        poke(server, "/_quirk?expire_always=1")
        code, summary = ingest(server, out, capsys, "--linked", "none", "--from", "2024-05-01")
    assert code == 3 and summary["lists_failed"] == 1
    assert any("refused again" in e and "badResumptionToken" in e for e in summary["errors"])
    assert [b for b, _f in list_bound(out)] == [b for b, _f in bound]  # not moved on


def test_rerun_relisting_unchanged_records_reports_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    with start(items=16) as server:
        assert ingest(server, out, capsys, "--linked", "none")[0] == 0
        code, summary = ingest(server, out, capsys, "--linked", "none", "--from", "2024-05-01")
        assert main(["status", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 0 and (summary["records"], summary["unchanged_records"]) == (0, 16)
    assert "records_archived=16" in first and "unchanged_last_run=16" in first


def test_pages_archived_then_a_list_failing_is_partial_not_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rerun whose first page re-lists unchanged records and whose second page is refused
    403: pages were read and archived, so the run is partial (3), not "nothing archived"
    (1); the 403 is asked once and named."""
    out = tmp_path / "c"
    with start() as server:
        assert ingest(server, out, capsys, "--linked", "none")[0] == 0
        poke(server, "/_quirk?forbidden_page=1")
        before = len(server_log(server))
        code, summary = ingest(server, out, capsys, "--linked", "none", "--from", "2024-05-01")
        log = server_log(server)[before:]
    assert code == 3 and summary["lists_failed"] == 1 and summary["unchanged_records"] == 4
    assert any("HTTP 403" in e and "refuses this harvester" in e for e in summary["errors"])
    assert sum("resumptionToken" in line for line in log) == 1  # stopped: not retried


def test_a_403_on_the_first_page_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(forbidden_page=0) as server:
        code = main(["harvest", server.url + "/oai", "--out", str(tmp_path / "c"), "--quiet",
                     "--mode", "records"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and "HTTP 403 Forbidden" in err[-1] and "refuses this harvester" in err[-1]


@pytest.mark.parametrize("status", [200, 422])
def test_errors_under_any_status_are_named_and_empty_lists_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: int
) -> None:
    with start(error_status=status) as server:
        empty = ingest(server, tmp_path / "a", capsys, "--set", "col_9", "--mode", "records")
        future = ingest(server, tmp_path / "b", capsys, "--from", "2030-01-01", "--mode", "records")
        code = main(["harvest", server.url + "/oai", "--out", str(tmp_path / "d"), "--quiet",
                     "--metadata-prefix", "marc21"])  # fmt: skip
    assert (empty[0], empty[1]["records"]) == (0, 0)
    assert (future[0], future[1]["records"]) == (0, 0)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 1 and "cannotDisseminateFormat: only oai_dc" in err
    assert (f"(HTTP {status} from " in err) == (status != 200)


def test_response_date_with_an_offset_is_read_in_utc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    with start(offset="+05:45") as server:
        code, summary = ingest(server, out, capsys, "--linked", "none")
    assert (code, summary["records"]) == (0, 12)
    log = (out / "harvest.log").read_text()
    assert log.count("come with a UTC offset") == 1  # one warning, whatever the pages
    # the repository's 2024-05-10T12:00:00Z, sent as 17:45:00+05:45, is the list's bound
    assert [b for b, _f in list_bound(out)] == ["2024-05-10T12:00:00Z"]


def test_garbage_earliest_datestamp_is_warned_about_not_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    with start(earliest="1st of May") as server:
        code, summary = ingest(server, out, capsys, "--linked", "none")
    assert (code, summary["mode"], summary["records"]) == (0, "records", 12)
    assert "earliestDatestamp" in (out / "harvest.log").read_text()


def test_an_unusable_identify_is_named_and_not_crawled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(identify_error="badVerb", error_status=422) as server:
        code = main(["harvest", server.url + "/oai", "--out", str(tmp_path / "c"), "--quiet"])
        log = server_log(server)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert "answers OAI-PMH, but its Identify is unusable: badVerb" in err[0]
    assert log == ["/oai?verb=Identify"]  # neither another path nor a crawl


def test_auto_mode_one_header_without_identifier_is_one_broken_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(headerless=0) as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--linked", "none")
    assert (code, summary["mode"], summary["records"], summary["broken"]) == (3, "records", 11, 1)


def test_metadata_prefix_all_with_odd_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A format without <metadataPrefix> is left out, one with a <__class__> child is a
    format like another (its list fails: the repository offers only oai_dc records)."""
    with start(formats="odd") as server:
        code, summary = ingest(server, tmp_path / "c", capsys, "--metadata-prefix", "all",
                               "--linked", "none")  # fmt: skip
        log = server_log(server)
    assert code == 3 and summary["records"] == 12 and summary["lists_failed"] == 1
    asked = [line for line in log if "verb=ListRecords&metadataPrefix=" in line]
    assert sorted(line.split("metadataPrefix=")[1] for line in asked) == ["oai_dc", "odd"]


def test_metadata_prefix_all_with_a_looping_list_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(formats="loop") as server:
        code = main(["harvest", server.url + "/oai", "--out", str(tmp_path / "c"), "--quiet",
                     "--metadata-prefix", "all"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "resumptionToken 'again' was used before" in err[0]


def test_status_json_of_a_records_collection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    with start() as server:
        ingest(server, out, capsys, "--linked", "none")
    assert main(["status", str(out), "--json"]) == 0
    resources = json.loads(capsys.readouterr().out)["collections"][0]["resources"]
    assert resources["records_archived"] == 12
    assert main(["status", str(out)]) == 0
    (run,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  run ")]
    assert "records=12 unchanged_records=0 deleted=0 broken=0 lists_failed=0" in run  # auto mode
