"""The failure lifecycle (harvester/failures.py) through the ``harvester`` CLI: a broken link
is a failure (exit 3) on the run that meets it and on its retry, then ``gone`` and no reason
for exit 3 while it stays broken; ``harvest``'s summary, ``runs.jsonl``, ``status`` and
``report`` say the same."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from coop_common.exitcode import ExitCode
from tests.commands import HARVESTER
from tests.conftest import start_provider
from tests.harvested import MISSING
from tests.servers import start_wsgi
from tests.sites import make_site


def run(*argv: str, **env: str) -> tuple[int, dict[str, Any]]:
    """``harvester ARGV --json``: its exit code and its JSON."""
    done = subprocess.run(
        [HARVESTER, *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, **env},
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def ends(out: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    return [line for line in lines if line["event"] == "end"]


@pytest.mark.parametrize("mode", ["crawl", "oai"])
def test_a_broken_link_fails_twice_then_is_gone_and_the_runs_pass(
    tmp_path: Path, mode: str
) -> None:
    site = make_site(tmp_path / "www", pages=12, seed=3)
    home = site.root / "index.html"
    link = f'<a href="{MISSING}">broken</a></body>'
    home.write_text(home.read_text(encoding="utf-8").replace("</body>", link), "utf-8")
    victim = site.root / "files" / "empty.txt"
    out = tmp_path / "out"
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        if mode == "oai":
            victim.unlink()  # listed (the index has not seen it go) but answering 404
        argv = ["harvest", server.url + "/", "--out", str(out), "--quiet", "--mode", mode]
        codes, summaries = [], []
        for _run in range(3):
            code, summary = run(*argv, HARVESTER_RETRY_DELAY="0")
            codes.append(code)
            summaries.append(summary)
    assert codes == [ExitCode.PARTIAL, ExitCode.OK, ExitCode.OK]
    assert [s["failed"] for s in summaries] == [1, 0, 0]
    # a crawl finds the link again each time; a listed file is not fetched once gone
    assert [s["gone"] for s in summaries] == ([0, 1, 1] if mode == "crawl" else [0, 1, 0])
    logged = ends(out)
    assert [e["exit"] for e in logged] == codes
    assert [e["counts"]["failed"] for e in logged] == [1, 0, 0]

    code, found = run("status", str(out))
    (one,) = found["collections"]
    assert code == ExitCode.OK
    assert one["resources"].get("failed", 0) == 0 and one["resources"]["gone"] == 1
    assert list(one["failures_by_status"]) == ["gone"]
    code, report = run("report", str(out), "--to", str(tmp_path / "r.html"))
    assert (report["failed"], report["gone"]) == (0, 1)


def test_an_unreadable_robots_txt_is_one_warning_for_its_host(tmp_path: Path) -> None:
    """robots.txt answering 503: every URL of the host waits, and the log says so once."""
    kwargs = {"robots_status": 503}
    with start_wsgi("tests.hostile:site", kwargs, ready_path="/count?path=/") as server:
        seeds = [f"{server.url}/hello/{n}" for n in range(6)]
        argv = [HARVESTER, "harvest", seeds[0], "--out", str(tmp_path / "out"), "--mode", "crawl"]
        argv += [flag for seed in seeds[1:] for flag in ("--seed", seed)]
        env = {**os.environ, "HARVESTER_ROBOTS_ERROR_TTL": "0.2"}  # asked again at each retry
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=300, check=False, env=env
        )
    assert done.returncode == ExitCode.PARTIAL, done.stderr
    warnings = [line for line in done.stderr.splitlines() if " WARNING " in line]
    assert len(warnings) == 1, warnings
    assert f"robots.txt {server.url}/robots.txt unreachable" in warnings[0]
