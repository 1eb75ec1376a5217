"""A typo'd start path (``SITE/nosuchpage.html``, a 404) stops the run in one line with exit 1,
as wget stops, instead of harvesting the whole site from its root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coop_common.exitcode import ExitCode
from tests.commands import harvester
from tests.conftest import start_provider
from tests.sites import make_site


@pytest.mark.parametrize("mode", ["auto", "crawl"])
def test_a_start_page_that_answers_404_stops_the_run(tmp_path: Path, mode: str) -> None:
    site = make_site(tmp_path / "www", pages=5, seed=2)
    out = tmp_path / "out"
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        url = server.url + "/nosuchpage.html"
        done = harvester("harvest", url, "--out", str(out), "--quiet", "--mode", mode)
    assert done.returncode == ExitCode.FAILED, done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"harvester: {url} answers HTTP 404: no such page to start from")
    assert not list(out.glob("warcs/*.warc.gz*")), "nothing of the site was archived"
    end = json.loads((out / "runs.jsonl").read_text().splitlines()[-1])
    assert (end["event"], end["exit"]) == ("end", ExitCode.FAILED)
