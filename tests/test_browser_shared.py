"""A browser crawl that two workers share on one PostgreSQL state (``docs/scale-out.md``):
two copies of the JavaScript site (``tests/js_site.py``) on two hosts, ``--workers 2``; every
page of both is archived once and none twice (a page is long in its tab after its document
came: its host is not given up, nor opened again, before the page's step), and nothing the
pages loaded is archived in full twice."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from harvester.storage import open_state
from tests.js_site import serve_js_site
from tests.pgcluster import PGCluster
from tests.test_browser_capture import PAGES
from tests.test_harvest import records


def test_two_workers_archive_every_page_once_none_twice(
    tmp_path: Path, pg_cluster: PGCluster
) -> None:
    state, out = pg_cluster.new_database(), tmp_path / "coll"
    # the pages that never end (/hang, /no-answer) given 10 s, not 30, for the test's time
    env = os.environ | {"HARVESTER_BROWSER_PAGE_TIME": "10"}
    with serve_js_site() as one, serve_js_site("127.0.0.2") as two:
        argv = [sys.executable, "-m", "harvester.cli", "harvest", one.url + "/"]
        argv += ["--seed", two.url + "/", "--mode", "crawl", "--browser", "--state", state]
        argv += ["--workers", "2", "--out", str(out), "--quiet"]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 3, run.stderr[-3000:]  # each site's /no-answer failed
    got: Counter[tuple[str, str]] = Counter()
    for kind, head, _ in records(out):
        if kind == "response":
            parts = urlsplit(head["WARC-Target-URI"])
            where = parts.path + (f"?{parts.query}" if parts.query else "")
            got[(f"{parts.scheme}://{parts.netloc}", where)] += 1
    for site in (one, two):
        for page in PAGES:
            assert got[(site.url, page)] == 1, (site.url, page)
    assert max(got.values()) == 1  # nothing twice, pages or what they loaded
    with open_state(state) as opened:
        by_worker = opened.captures_by_worker(one.url + "/")
    # the pages, each once; what they loaded is kept in rows that no count includes
    assert sum(by_worker.values()) == 2 * len(PAGES)
    assert len(by_worker) == 2  # both workers had pages
