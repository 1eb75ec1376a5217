"""The fast path for files (:mod:`server_module.files.gate`) answers exactly as the Flask view.

Two providers over one site, one as built (the gate before Flask) and one with the gate taken
off (Flask alone, the code before the gate); every request below goes to both, byte for byte
(the request path unnormalised), and the status line, the header fields in order (but the
``Date`` of the exchange) and the body must be the same.
"""

from __future__ import annotations

import http.client
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask

from server_module.app import create_app
from server_module.files.gate import FileGate
from tests.conftest import start_provider
from tests.servers import RunningServer, start_command
from tests.sites import Manifest, make_site

BIG = os.urandom(200 * 1024)  # sent by a file wrapper, not read into memory
FUTURE = "Sat, 01 Jan 2100 00:00:00 GMT"
PAST = "Thu, 01 Jan 1970 00:00:00 GMT"

Answer = tuple[int, str, list[tuple[str, str]], bytes]


def flask_only(**kwargs: Any) -> Flask:
    """The provider without the gate: every file request through the Flask view."""
    app = create_app(**kwargs)
    assert isinstance(app.wsgi_app, FileGate)
    app.wsgi_app = app.wsgi_app.flask  # type: ignore[method-assign]
    return app


def ask(server: RunningServer, method: str, path: str, headers: dict[str, str]) -> Answer:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    conn.putrequest(method, path, skip_accept_encoding=True)
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    # Flask's Allow lists a set's methods, in an order that varies between processes
    fields = [(k, _sorted(v) if k == "Allow" else v) for k, v in resp.getheaders() if k != "Date"]
    return resp.status, resp.reason, fields, body


def _sorted(methods: str) -> str:
    return ", ".join(sorted(methods.split(", ")))


@pytest.fixture
def site(tmp_path: Path) -> Manifest:
    manifest = make_site(tmp_path / "www", pages=30, seed=3)
    root = manifest.root
    (root / "big.bin").write_bytes(BIG)
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "link.html").symlink_to("../index.html")
    (root / "docs" / "swapped.html").symlink_to("../index.html")
    (root / "changed.html").write_bytes(b"<title>before</title>")
    (root / "sub").mkdir()
    (root / "sub" / "index.html").write_bytes(b"<title>a folder's page</title>")
    return manifest


@pytest.fixture
def servers(site: Manifest, tmp_path: Path) -> Iterator[tuple[RunningServer, RunningServer]]:
    with (
        start_provider(site.root, tmp_path / "new.sqlite") as gated,
        start_provider(site.root, tmp_path / "old.sqlite", app=f"{__name__}:flask_only") as old,
    ):
        # after both indexed the site: changes neither index has seen
        (site.root / "changed.html").write_bytes(b"<title>after, and longer</title>")
        os.unlink(site.root / "docs" / "swapped.html")
        (site.root / "docs" / "swapped.html").symlink_to("../.git/config")
        yield gated, old


def requests_for(site: Manifest, gated: RunningServer) -> list[tuple[str, str, dict[str, str]]]:
    paths = [f"/{quote(os.fsencode(rel), safe='/')}" for rel in sorted(site.public)]
    paths += ["/big.bin", "/changed.html", "/docs/link.html", "/docs/swapped.html"]
    etag = ask(gated, "GET", "/index.html", {})[2]
    tag = dict(etag)["ETag"]
    conditions: list[dict[str, str]] = [
        {},
        {"If-None-Match": "*"},
        {"If-Modified-Since": FUTURE},
        {"If-Modified-Since": PAST},
        {"If-None-Match": '"other"', "If-Modified-Since": FUTURE},
    ]
    asked = [(m, path, c) for path in paths for m in ("GET", "HEAD") for c in conditions]
    odd = ["/no-such.html", "/docs/", "/sub", "/sub/", "/sub?q=1", "/", "//index.html"]
    odd += ["/%69ndex.html", "/index.html?x=1", "/index.html/", "/.git/config", "/oai/oai2.xsl"]
    odd += ["/oai/schemas/x.xsd", "/index.html%00", "/../index.html"]
    asked += [("GET", path, {}) for path in odd]
    asked += [(method, "/index.html", {}) for method in ("POST", "PUT", "OPTIONS")]
    for match in (tag, "W/" + tag, f'"x", {tag}'):
        asked.append(("GET", "/index.html", {"If-None-Match": match}))
    return asked


def test_the_gate_answers_as_the_flask_view_byte_for_byte(
    site: Manifest, servers: tuple[RunningServer, RunningServer]
) -> None:
    gated, old = servers
    statuses = set()
    for method, path, headers in requests_for(site, gated):
        answer = ask(gated, method, path, headers)
        assert answer == ask(old, method, path, headers), (method, path, headers)
        statuses.add(answer[0])
    assert {200, 301, 304, 404, 405} <= statuses
    assert ask(gated, "GET", "/big.bin", {})[3] == BIG
    assert ask(gated, "GET", "/docs/swapped.html", {})[0] == 404


def test_gunicorn_serves_the_bytes_through_the_gate(site: Manifest, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "server_module.cli", "serve", str(site.root), "--port"]
    argv += ["{port}", "--index", str(tmp_path / "idx.sqlite"), "--workers", "1", "--threads", "2"]
    with start_command(argv, ready_path="/oai?verb=Identify") as server:
        for path, data in (
            ("/big.bin", BIG),
            ("/index.html", (site.root / "index.html").read_bytes()),
        ):
            status, _, fields, body = ask(server, "GET", path, {})
            assert (status, body, dict(fields)["Content-Length"]) == (200, data, str(len(data)))
            assert ask(server, "GET", path, {"If-Modified-Since": FUTURE})[0] == 304
            assert ask(server, "HEAD", path, {})[2] == fields
