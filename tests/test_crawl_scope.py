"""Every seed source of a crawl (SITE_URL, ``--seed``, the site's sitemaps) passes the same
scope and trap rules, proven on two real loopback hosts: the second is never asked."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvester.run.assembly import build_harvest
from harvester.settings import load_settings
from tests.servers import RunningServer, start_wsgi
from tests.test_harvest import records

TRAP = "/t/t/t/t/trap.html"  # one segment four times: the trap rules' limit is three


def requested(server: RunningServer) -> list[str]:
    with urllib.request.urlopen(server.url + "/_log", timeout=10) as response:
        return list(json.loads(response.read()))


@pytest.fixture()
def elsewhere() -> Iterator[RunningServer]:
    """The second host: another loopback address, so another host for the scope."""
    with start_wsgi("tests.sitemap_site:sitemap_site", {}, host="127.0.0.2") as server:
        yield server


def test_sitemaps_and_seeds_stay_in_scope(elsewhere: RunningServer, tmp_path: Path) -> None:
    other = elsewhere.url
    kwargs = {
        "declared": [f"{other}/sitemap.xml", "/sitemap.xml"],
        "children": ["{base}/pages.xml", f"{other}/pages.xml"],
        "pages": [
            "{base}/only-in-sitemap.html",
            f"{other}/offsite.html",
            "{base}/excluded/listed.html",
            "{base}" + TRAP,
        ],
        "base": "http://{host}:{port}",
    }
    before = requested(elsewhere)
    with start_wsgi("tests.sitemap_site:sitemap_site", kwargs) as site:
        settings = load_settings(
            site_url=site.url + "/",
            out=tmp_path / "out",
            mode="crawl",
            seeds=(site.url + "/excluded/seeded.html", site.url + TRAP + "?seed"),
            exclude=("/excluded/",),
            delay_factor=0.0,
            quiet=True,
            environ={},
        )
        build_harvest(settings).run()
        asked = requested(site)
    assert requested(elsewhere) == before, "the second host was asked for something"
    archived = {h["WARC-Target-URI"] for t, h, _c in records(tmp_path / "out") if t == "response"}
    assert {f"{site.url}/only-in-sitemap.html", f"{site.url}/linked.html"} <= archived
    assert not [u for u in archived if u.startswith(other)]
    assert not [p for p in asked if p.startswith(("/excluded/", "/t/"))], asked
