"""Shared fixtures: generated sites and a real provider on a loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from lxml import etree

from tests.pgcluster import PGCluster
from tests.schemas import assert_valid
from tests.servers import RunningServer, start_wsgi, wait_analysed
from tests.sites import Manifest, make_site

OAI = "{http://www.openarchives.org/OAI/2.0/}"
NS = {"oai": "http://www.openarchives.org/OAI/2.0/"}


def start_provider(
    root: Path,
    index: Path,
    *,
    app: str = "server_module.app:create_app",
    ready_path: str = "/oai?verb=Identify",
    env: dict[str, str] | None = None,
    **settings: Any,
) -> RunningServer:
    """The provider of the site at ``root`` on a loopback port, with ``settings``: the app's
    own, or ``app``, a test's wrapper of it taking the same settings (and its own). Its
    plugins are off unless ``plugins=True``: they analyse after the rows are listed and move
    the records' datestamps (``docs/plugins.md``), so with them the start waits until they
    are done (:func:`~tests.servers.wait_analysed`), that the tests' harvests see no record
    change under them."""
    kwargs = {
        "docroot": str(root),
        "base_url": "http://{host}:{port}",
        "index_path": str(index),
        "refresh_interval": 0,
        "plugins": False,
        **settings,
    }
    server = start_wsgi(app, kwargs, ready_path=ready_path, env=env)
    if kwargs["plugins"]:
        try:
            wait_analysed(index)
        except BaseException:
            server.stop()
            raise
    return server


def start_plain_site(root: Path, index: Path) -> RunningServer:
    """The site's files with no OAI-PMH endpoint or ResourceSync to find: what a crawl meets."""
    return start_provider(root, index, endpoint="/not-oai", resourcesync=False)


class OAIClient:
    """Plain requests plus schema validation of every answer: the tests' own thin client."""

    def __init__(self, server: RunningServer, endpoint: str = "/oai") -> None:
        self.url = server.url + endpoint
        self.session = requests.Session()

    def get(self, method: str = "GET", **params: str) -> etree._Element:
        if method == "POST":
            resp = self.session.post(self.url, data=params, timeout=30)
        else:
            resp = self.session.get(self.url, params=params, timeout=30)
        assert resp.status_code == 200, resp.text[:500]
        assert resp.headers["Content-Type"] == "text/xml; charset=UTF-8"
        return assert_valid(resp.content)

    def error_code(self, **params: str) -> str | None:
        root = self.get(**params)
        error = root.find(f"{OAI}error")
        return None if error is None else error.get("code")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return make_site(tmp_path_factory.mktemp("site") / "www", pages=60, seed=11)


@pytest.fixture(scope="module")
def provider(site: Manifest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    index = tmp_path_factory.mktemp("index") / "index.sqlite"
    with start_provider(site.root, index, page_size=7, records_page_size=5, plugins=True) as server:
        yield server


@pytest.fixture(scope="module")
def oai(provider: RunningServer) -> OAIClient:
    return OAIClient(provider)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PGCluster]:
    """A throwaway PostgreSQL cluster for the whole session (``tests/pgcluster.py``)."""
    cluster = PGCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty state of each backend: the storage tests run against both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.sqlite'}"
    cluster: PGCluster = request.getfixturevalue("pg_cluster")
    return cluster.new_database()
