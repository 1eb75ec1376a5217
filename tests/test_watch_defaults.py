"""``harvester watch`` run as the README shows it, with default flags: it spends its budget on
a crawled site (no rounds of fetching then waiting), and on a provider-backed site it polls
often enough that a change is archived within seconds, counting what each poll archived."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import start_provider
from tests.servers import start_wsgi
from tests.sites import make_site
from tests.test_watch import change_while_watched, records

RATES = [0.5, 0.2, *[0.0] * 18]  # two pages change every few seconds, 18 never


def _watch(url: str, out: Path, *flags: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "harvester.cli", "watch", url + "/", "--out", str(out)]
    return subprocess.Popen(
        [*argv, "--json", *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_a_watch_with_default_flags_spends_its_budget(tmp_path: Path) -> None:
    """21 URLs at 10 a second: one round-robin cycle is 2.1 s; in 8 s the budget is about 80
    fetches. The old default floor of 60 s a URL let it fetch each URL once, then wait."""
    with start_wsgi("tests.changing_site:changing_site", {"rates": RATES, "seed": 5}) as server:
        out = tmp_path / "coll"
        proc = _watch(server.url, out, "--rate", "10", "--max-time", "8")
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()
    summary = json.loads(stdout)
    assert summary["fetches"] >= 50, summary  # 21 before: each URL once
    captured = sum(
        n for (kind, _path), n in records(out).items() if kind in ("response", "revisit")
    )
    assert captured == summary["fetches"] - summary["failed"]


def test_a_change_on_a_provider_backed_site_is_archived_within_seconds(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=10, seed=7)
    with start_provider(site.root, tmp_path / "index.sqlite", refresh_interval=1) as server:
        out = tmp_path / "coll"
        proc = _watch(server.url, out, "--max-time", "60")  # the default rate: 1 a second
        url = server.url + "/index.html"
        took, stdout, stderr = change_while_watched(proc, site.root, url, out, 30, 8)
    assert took is not None, "the changed file was not archived within 8 s"
    assert proc.returncode == 0, stderr.decode()
    summary = json.loads(stdout)
    # the site's files; its root, the seed every run fetches besides, is counted apart
    archived = {path for (kind, path) in records(out) if kind == "response" and path != "/"}
    assert len(archived) > 5  # the site's files, each archived once at the first poll
    assert summary["changed"] >= len(archived) + 1, summary  # then the change: all counted
