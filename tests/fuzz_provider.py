"""The provider the fuzz drives (``tests/test_provider_fuzz.py``, ``bench/fuzz.py``): built in
process or served by the CLI's gunicorn, with small pages so that lists have several tokens,
and the corpus of identifiers and tokens each one yields (:func:`tests.fuzz_requests.read_corpus`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient
from lxml import etree

from server_module.app import create_app
from tests.fuzz_oracle import Corpus, Wire
from tests.fuzz_requests import read_corpus, send_socket
from tests.schemas import assert_valid
from tests.servers import RunningServer
from tests.sites import Manifest

BASE = "http://example.org"
GUNICORN_MAX_LINE = 8190  # gunicorn's largest limit_request_line, which the provider sets
#: gunicorn's environment: the CLI has no flag for the ListRecords page size.
GUNICORN_ENV = {"OAI_PROVIDER_RECORDS_PAGE_SIZE": "5"}


def fuzz_app(site: Manifest, index: Path) -> Flask:
    """The provider the fuzz drives: small pages, so lists have several tokens."""
    app = create_app(
        site.root, BASE, index_path=index, page_size=7, records_page_size=5, refresh_interval=0
    )
    # the plugins' analyses restamp records (docs/plugins.md): done before the fuzz begins
    if not app.extensions["oai_repository"].index.wait_analysed(120):
        raise TimeoutError("the provider's plugins did not finish within 120 s")
    return app


def serve_argv(docroot: Path, index: Path) -> list[str]:
    """The production server: the CLI's gunicorn, one worker, small pages."""
    return [
        sys.executable, "-m", "server_module.cli", "serve", str(docroot),
        "--port", "{port}", "--base-url", "http://{host}:{port}", "--index", str(index),
        "--page-size", "7", "--workers", "1", "--threads", "1", "--refresh-interval", "0",
    ]  # fmt: skip


def gunicorn_refusal(wire: Wire) -> int | None:
    """The status gunicorn answers itself, before the provider, for a request line it
    refuses: too long (414), or with bytes outside printable ASCII (400, RFC 9112 §3.2)."""
    if len(wire.query) + len(b"POST /oai? HTTP/1.1") > GUNICORN_MAX_LINE:
        return 414
    if any(b < 0x21 or b > 0x7E for b in wire.query):
        return 400
    return None


def corpus_of(client: FlaskClient) -> Corpus:
    """The corpus of the app behind ``client``."""

    def get(params: dict[str, str]) -> etree._Element:
        response = client.get("/oai", query_string=params)
        response.close()
        return assert_valid(response.data)

    return read_corpus(get)


_CORPORA: dict[int, Corpus] = {}


def socket_corpus(server: RunningServer) -> Corpus:
    """The real server's own tokens: its secret is its index's, not the test client's."""
    if server.port not in _CORPORA:

        def get(params: dict[str, str]) -> etree._Element:
            query = "&".join(f"{k}={v}" for k, v in params.items()).encode()
            status, _type, body = send_socket(server.host, server.port, Wire("GET", query, None))
            assert status == 200
            return assert_valid(body)

        _CORPORA[server.port] = read_corpus(get)
    return _CORPORA[server.port]
