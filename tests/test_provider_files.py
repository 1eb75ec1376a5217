"""The provider serves the site's files, and nothing else, with the headers it reports."""

from __future__ import annotations

import http.client
import os
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from tests.conftest import OAIClient
from tests.servers import RunningServer, start_command
from tests.sites import Manifest, make_site

SECRETS = (b"never serve me", b"Deny from all", b"bare = false", b"<title>secret</title>")


def raw_get(server: RunningServer, path: str, method: str = "GET") -> tuple[int, bytes]:
    """Send the path byte for byte: no client-side normalisation of dot segments."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    conn.putrequest(method, path, skip_accept_encoding=True)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


@pytest.mark.parametrize(
    "path",
    [
        "/../www-outside-secret.txt",
        "/files/../../www-outside-secret.txt",
        "/%2e%2e/www-outside-secret.txt",
        "/%252e%252e/www-outside-secret.txt",
        "/files/%2e%2e/%2e%2e/www-outside-secret.txt",
        "/..%2fwww-outside-secret.txt",
        "//etc/passwd",
        "/%2fetc%2fpasswd",
        "/files\\..\\..\\www-outside-secret.txt",
        "/files/escape.txt",
        "/.htaccess",
        "/.git/config",
        "/%2egit/config",
        "/docs/.secret.html",
        "/index.html%00.txt",
    ],
)
def test_nothing_outside_the_root_or_hidden(provider: RunningServer, path: str) -> None:
    status, body = raw_get(provider, path)
    assert status in (400, 404)
    assert not any(secret in body for secret in SECRETS)


def test_every_public_file_is_served_with_its_bytes(
    provider: RunningServer, site: Manifest
) -> None:
    session = requests.Session()
    for rel in sorted(site.public):
        resp = session.get(f"{provider.url}/{quote(os.fsencode(rel), safe='/')}", timeout=10)
        assert resp.status_code == 200, rel
        data = (site.root / rel).read_bytes()
        assert resp.content == data
        assert int(resp.headers["Content-Length"]) == len(data)


def test_conditional_get_and_head(provider: RunningServer) -> None:
    url = provider.url + "/index.html"
    first = requests.get(url, timeout=10)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert first.headers["Content-Type"] == "text/html"
    assert requests.get(url, headers={"If-None-Match": etag}, timeout=10).status_code == 304
    assert requests.get(url, headers={"If-Modified-Since": modified}, timeout=10).status_code == 304
    assert requests.get(url, headers={"If-None-Match": '"other"'}, timeout=10).status_code == 200
    head = requests.head(url, timeout=10)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == first.headers["Content-Length"]
    assert head.headers["ETag"] == etag


def test_directory_url_serves_its_index(provider: RunningServer) -> None:
    resp = requests.get(provider.url + "/", timeout=10)
    assert resp.status_code == 200 and b"<title>Page index.html</title>" in resp.content


def test_serve_command_runs_under_gunicorn(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=20)
    argv = [
        sys.executable,
        "-m",
        "server_module.cli",
        "serve",
        str(site.root),
        "--port",
        "{port}",
        "--index",
        str(tmp_path / "idx.sqlite"),
        "--workers",
        "1",
    ]
    with start_command(argv, ready_path="/oai?verb=Identify") as server:
        assert requests.get(server.url + "/index.html", timeout=10).status_code == 200
        ids = OAIClient(server).get(verb="ListIdentifiers", metadataPrefix="oai_dc")
        assert len(ids.findall(".//{http://www.openarchives.org/OAI/2.0/}header")) == len(
            site.public
        )
        resp = requests.get(server.url + "/oai?verb=Identify", timeout=10)
        assert "gunicorn" in resp.headers.get("Server", "")
