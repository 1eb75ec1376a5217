"""Folders answer as nginx answers them (issue 12, #12): ``/library`` redirects 301 to
``/library/``, which serves ``library/index.html``; hidden, excluded and index-less folders
stay 404."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from tests.conftest import start_provider
from tests.servers import RunningServer

INDEX = b"<html><title>Library</title>shelves</html>"


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    base = tmp_path_factory.mktemp("dirs")
    root = base / "www"
    for folder in ("library", "caf\u00e9 corner", ".git", "#drafts#", "empty"):
        (root / folder).mkdir(parents=True)
    for folder in ("library", "caf\u00e9 corner", ".git", "#drafts#"):
        (root / folder / "index.html").write_bytes(INDEX)
    (root / "library" / "book.txt").write_bytes(b"a book")
    (root / "empty" / "note.txt").write_bytes(b"no index here")
    with start_provider(root, base / "index.sqlite") as server:
        yield server


def get(provider: RunningServer, path: str) -> requests.Response:
    return requests.get(provider.url + path, allow_redirects=False, timeout=10)


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/library", "/library/"),
        ("/library?x=1&y=%2F", "/library/?x=1&y=%2F"),
        ("/caf%C3%A9%20corner", "/caf%C3%A9%20corner/"),
        ("//library", "/library/"),  # never "//library/": a redirect off-site
    ],
)
def test_a_folder_without_its_slash_redirects_keeping_the_query(
    provider: RunningServer, path: str, location: str
) -> None:
    resp = get(provider, path)
    assert resp.status_code == 301
    assert resp.headers["Location"] == location
    assert INDEX not in resp.content


def test_the_redirect_is_for_head_too(provider: RunningServer) -> None:
    resp = requests.head(provider.url + "/library", allow_redirects=False, timeout=10)
    assert (resp.status_code, resp.headers["Location"]) == (301, "/library/")


def test_a_folder_with_its_slash_serves_its_index_with_the_index_headers(
    provider: RunningServer,
) -> None:
    folder, page = get(provider, "/library/"), get(provider, "/library/index.html")
    assert (folder.status_code, folder.content) == (200, INDEX)
    for name in ("Content-Type", "Content-Length", "ETag", "Last-Modified"):
        assert folder.headers[name] == page.headers[name], name
    assert folder.headers["Content-Type"] == "text/html"


def test_a_client_following_the_redirect_gets_the_index(provider: RunningServer) -> None:
    resp = requests.get(provider.url + "/library?q=1", timeout=10)
    assert resp.status_code == 200 and resp.content == INDEX
    assert resp.url == provider.url + "/library/?q=1"
    assert [r.status_code for r in resp.history] == [301]


@pytest.mark.parametrize(
    "path",
    [
        "/.git",
        "/.git/",
        "/%2Egit",
        "/%23drafts%23",
        "/%23drafts%23/",
        "/empty",
        "/empty/",
        "/nowhere",
        "/nowhere/",
        "/library/book.txt/",
    ],
)
def test_hidden_excluded_and_index_less_folders_stay_404(
    provider: RunningServer, path: str
) -> None:
    resp = get(provider, path)
    assert resp.status_code == 404, path
    assert "Location" not in resp.headers


def test_a_file_is_served_as_before(provider: RunningServer) -> None:
    resp = get(provider, "/library/book.txt")
    assert (resp.status_code, resp.content) == (200, b"a book")
