"""Records mode against a real repository's recorded answers, replayed byte for byte.

Zenodo (InvenioRDM) answers every OAI-PMH error with HTTP 422, and its lists are not sorted
by datestamp (``tests/recordings/zenodo/README.md``). Each test runs the ``harvester``
command as the README shows it, against :mod:`tests.replay_repo` on loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harvester.cli import main
from tests.servers import RunningServer, start_wsgi
from tests.test_harvest import records as warc_records
from tests.test_records import PRES, item_didls

ENDPOINT = "/oai2d"
ZENODO_IDS = 9  # three pages of three records: eight, and one deleted (on the second page)
DELETED = "oai:zenodo.org:8433364"


def zenodo(**rules: object) -> RunningServer:
    return start_wsgi("tests.replay_repo:replay", {"folder": "zenodo", **rules}, ready_path="/_log")


def run(
    server: RunningServer, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any], str]:
    """``harvester harvest URL/oai2d --out OUT --json``: exit code, summary, stderr."""
    code = main(["harvest", server.url + ENDPOINT, "--out", str(out), "--json", *extra])
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    summary = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return code, summary, captured.err


def replayed(server: RunningServer) -> list[tuple[str, str]]:
    with urllib.request.urlopen(server.url + "/_log", timeout=5) as response:
        return [(query, file) for query, file in json.load(response)]


def archived_ids(out: Path) -> Counter[str | None]:
    return Counter(d.findtext(f".//{PRES}identifier") for d in item_didls(out))


def test_zenodo_ingested_then_rerun_with_nothing_new_is_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rerun's list is answered 422 noRecordsMatch: nothing new, exit 0 (not exit 1)."""
    out = tmp_path / "c"
    with zenodo(otherwise={"from": "listrecords-from-future.xml"}) as server:
        code, first, _err = run(server, out, capsys)
        again, second, err = run(server, out, capsys)
        log = replayed(server)
    assert (code, first["mode"], first["records"], first["deleted"]) == (0, "records", 8, 1)
    assert (again, second["records"], second["lists_failed"]) == (0, 0, 0), err
    assert "-" not in {file for _q, file in log}, log  # nothing asked that was not recorded
    assert log[-1][1] == "listrecords-from-future.xml" and "from=" in log[-1][0]
    statuses = [h.get("WARC-Target-URI") for k, h, _b in warc_records(out) if k == "response"]
    assert sum("from=" in (u or "") for u in statuses) == 1  # the 422 answer is archived


@pytest.mark.parametrize(
    ("flag", "value", "answer"),
    [("--set", "XXX", "listrecords-set-unknown.xml")],
)
def test_zenodo_an_empty_set_is_zero_records_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, answer: str
) -> None:
    with zenodo() as server:
        code, summary, err = run(server, tmp_path / "c", capsys, "--mode", "records", flag, value)
        log = replayed(server)
    assert (code, summary["records"], summary["lists_failed"]) == (0, 0, 0), err
    assert log[-1][1] == answer


def test_zenodo_unknown_metadata_prefix_names_bad_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with zenodo() as server:
        code, _summary, err = run(server, tmp_path / "c", capsys, "--metadata-prefix", "XXX")
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("harvester: no list page read from ")
    assert "badArgument: metadataPrefix does not exist (HTTP 422 from " in last
    assert "Traceback" not in err


def test_zenodo_expired_token_relists_from_the_bound_and_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first page's token is refused once (Zenodo's own 422 badResumptionToken answer):
    the list is read again from its bound, not from the newest datestamp seen, since the
    second page holds older records than the first: all nine are archived, once each."""
    first_token = json.loads((Path(__file__).parent / "recordings/zenodo/index.json").read_text())
    token = next(
        e["query"]["resumptionToken"] for e in first_token if e["file"] == "listrecords-2.xml"
    )
    out = tmp_path / "c"
    with zenodo(refuse_once=[token], refusal="listrecords-token-expired.xml") as server:
        code, summary, err = run(server, out, capsys)
        log = replayed(server)
    assert (code, summary["records"], summary["deleted"], summary["lists_failed"]) == (0, 8, 1, 0)
    assert "listing anew from the start" in err
    ids = archived_ids(out)
    assert len(ids) == ZENODO_IDS - 1 and set(ids.values()) == {1} and DELETED not in ids
    notes = [b for k, _h, b in warc_records(out) if k == "metadata" and b"pres:deletion" in b]
    assert len(notes) == 1 and DELETED.encode() in notes[0]
    lists = [(q, f) for q, f in log if "verb=ListRecords" in q]
    assert [f for _q, f in lists] == [
        "listrecords-1.xml", "listrecords-token-expired.xml",
        "listrecords-1.xml", "listrecords-2.xml", "listrecords-3.xml",
    ]  # fmt: skip
    assert "from=" not in lists[2][0]  # the list's own bound: none on a first run


def test_zenodo_urls_takes_the_endpoint_and_labels_identifiers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``harvester urls`` finds the endpoint at the URL given, as ``harvest`` does, and says
    that a records repository's identifiers are not URLs."""
    with zenodo() as server:
        code = main(["urls", server.url + ENDPOINT])
        out = capsys.readouterr()
        assert main(["urls", server.url + ENDPOINT, "--json"]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    lines = out.out.splitlines()
    assert len(lines) == 8 and all(line.startswith("oai:zenodo.org:") for line in lines)
    assert "0 URLs" not in out.err and "8 identifiers that are not URLs" in out.err  # one deleted
    assert all(r["url"] is None and r["identifier"].startswith("oai:") for r in rows)


def test_zenodo_metadata_prefix_all_reads_list_metadata_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Zenodo's formats, read by the harvester's own parsing; each is listed (only oai_dc's
    list was recorded: the others answer 404 and fail, named)."""
    with zenodo() as server:
        code, summary, err = run(server, tmp_path / "c", capsys, "--metadata-prefix", "all")
        log = replayed(server)
    assert code == 3 and summary["records"] + summary["deleted"] == ZENODO_IDS, err
    asked = {q.split("metadataPrefix=")[1] for q, _f in log if "ListRecords&metadataPrefix=" in q}
    assert {"oai_dc", "datacite", "marcxml"} <= asked


def test_zenodo_as_the_readme_shows_it(tmp_path: Path) -> None:
    """``harvester harvest URL --out DIR`` twice, in a process of its own, default flags: the
    run line names the records, the rerun's 422 noRecordsMatch is an empty list, exit 0."""
    out = tmp_path / "repo"
    argv = [sys.executable, "-m", "harvester.cli", "harvest"]
    with zenodo(otherwise={"from": "listrecords-from-future.xml"}) as server:
        runs = [
            subprocess.run(
                [*argv, server.url + ENDPOINT, "--out", str(out)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            for _ in range(2)
        ]
    first, again = (run.stdout.strip().splitlines()[-1] for run in runs)
    assert [run.returncode for run in runs] == [0, 0], [run.stderr for run in runs]
    assert first.startswith("records=8  unchanged_records=0  deleted=1  broken=0  lists_failed=0")
    assert again.startswith("records=0  unchanged_records=0  deleted=0  broken=0  lists_failed=0")
    assert "Traceback" not in "".join(run.stderr for run in runs)
