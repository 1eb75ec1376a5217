"""``harvester status``: counts, failures by reason, WARC files, runs and list bounds of a real
harvest's collection, for one folder or several."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_common.exitcode import ExitCode
from harvester.cli import main
from harvester.storage import open_state
from tests.harvested import Harvested, harvested
from tests.pgcluster import PGCluster


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harvested]:
    with harvested(tmp_path_factory.mktemp("status")) as found:
        yield found


def status_json(capsys: pytest.CaptureFixture[str], *folders: Path) -> dict:
    assert main(["status", *map(str, folders), "--json"]) == ExitCode.OK
    return json.loads(capsys.readouterr().out)


def test_status_counts_files_runs_and_lists(
    collection: Harvested, capsys: pytest.CaptureFixture[str]
) -> None:
    (one,) = status_json(capsys, collection.out)["collections"]
    assert one["resources"] == {"archived": len(collection.site.public), "unchanged_last_run": 0}
    warcs = sorted((collection.out / "warcs").glob("*.warc.gz"))
    assert one["warcs"]["files"] == len(warcs)
    assert one["warcs"]["bytes"] == sum(p.stat().st_size for p in warcs)
    (run,) = one["runs"]
    assert run["mode"] == "oai-get" and run["end"] >= run["start"]
    assert run["counts"]["fetched"] == len(collection.site.public)
    (site,) = one["sites"]
    assert site["endpoint"] == collection.url + "/oai"
    (listed,) = site["lists"]
    assert listed["prefix"] == "oai_dc" and listed["from"] and listed["state"] == "idle"


def test_failures_are_counted_by_reason_and_runs_accumulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with harvested(tmp_path, crawl=True) as crawled:
        again = ["harvest", crawled.url + "/", "--out", str(crawled.out), "--mode", "crawl"]
        assert main([*again, "--quiet"]) in (ExitCode.OK, ExitCode.PARTIAL)
    capsys.readouterr()
    (one,) = status_json(capsys, crawled.out)["collections"]
    assert one["failures"] == {"HTTP 404": 1}
    assert one["resources"]["gone"] == 1
    assert [r["mode"] for r in one["runs"]] == ["crawl", "crawl"]
    assert one["sites"] == [
        {"site": crawled.url + "/", "endpoint": None, "mode": "crawl", "lists": []}
    ]
    assert main(["status", str(crawled.out)]) == ExitCode.OK
    runs = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  run ")]
    assert len(runs) == 2
    assert all(" crawl: fetched=" in line and "listed" not in line for line in runs), runs


def test_several_folders_add_up(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = collection.copy(tmp_path / "c")
    found = status_json(capsys, collection.out, other)
    assert [c["folder"] for c in found["collections"]] == [str(collection.out), str(other)]
    assert found["total"]["archived"] == 2 * len(collection.site.public)
    assert found["total"]["warc_files"] == 2 * found["collections"][0]["warcs"]["files"]


def test_the_text_form_has_a_line_per_run_and_a_total(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = collection.copy(tmp_path / "c")
    assert main(["status", str(collection.out), str(other)]) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0] == f"{collection.out}: archived={len(collection.site.public)} unchanged_last_run=0"
    )
    assert sum(line.startswith("  run ") for line in lines) == 2
    assert lines[-1].startswith(f"total: archived={2 * len(collection.site.public)} ")


def test_a_folder_that_is_no_collection_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", str(tmp_path)]) == ExitCode.FAILED
    assert (
        capsys.readouterr().err
        == f"harvester: {tmp_path}: not a collection (no state.sqlite, no warcs/)\n"
    )


def test_didl_exports_the_records_of_several_folders(
    collection: Harvested, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = collection.copy(tmp_path / "c")
    to = tmp_path / "didl"
    assert main(["didl", str(collection.out), str(other), "--to", str(to), "--json"]) == 0
    # the same records twice: the same files, each written once
    # (the site's files and the seed, its root: harvester/listed/seed.py)
    assert json.loads(capsys.readouterr().out)["didl"] == 2 * (len(collection.site.public) + 1)
    assert len(list(to.rglob("*.xml"))) == len(collection.site.public) + 1


def test_a_state_kept_elsewhere_is_read_with_state(
    collection: Harvested, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A job's state need not be in its folders (``--state``, scale-out's PostgreSQL):
    ``status --state`` reads it once and the folders give their WARC files and runs."""
    copy = collection.copy(tmp_path / "copy")
    elsewhere = tmp_path / "job.sqlite"
    (copy / "state.sqlite").rename(elsewhere)
    assert main(["status", str(copy), "--state", f"sqlite:///{elsewhere}", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    public = len(collection.site.public)
    assert found["job"]["resources"] == {"archived": public}
    assert found["job"]["workers"] == {collection.url + "/": {"": public}}
    assert found["total"]["archived"] == public and found["total"]["warc_files"] >= 1


def test_status_reads_a_postgresql_job(
    pg_cluster: PGCluster, collection: Harvested, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pg_cluster.new_database()
    site = "http://127.0.0.2:9/"
    with open_state(url) as state:
        state.add_pending(site, [site + "a", site + "b"])
    assert main(["status", str(collection.out), "--state", url]) == ExitCode.OK
    text = capsys.readouterr().out
    assert f"job {url}: pending=2" in text and "total: " in text
