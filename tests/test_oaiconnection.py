"""The OAI-PMH client's kept-alive transport (harvester.oai.connectiontransport) against loopback
servers.

Each server is a :class:`tests.loopback_http.ScriptedHttp`, which sees every connection and
request head; the proxy one is such a server too, so which path a request took is seen where
it arrived.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from harvester.exceptions import PermanentFetchError, ProtocolError, TransientFetchError
from harvester.http.limits import OAILimits, oai_limits
from harvester.oai.client import OAIClient
from harvester.oai.connectiontransport import ConnectionTransport
from harvester.oai.httpclient import Http
from harvester.oai.transport import SessionTransport
from harvester.settings import defaults
from tests.loopback_http import CLOSE, Request, ScriptedHttp, TlsFiles, response, tls_files, trickle
from tests.oai_apps import envelope, identify_element

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
BODY = b"<page>" + b"x" * 5000 + b"</page>"


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' own environment decides which proxies are named, nothing inherited."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return tls_files(tmp_path_factory.mktemp("tls"))


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def limits(**changes: Any) -> OAILimits:
    return replace(oai_limits(defaults()), **{"timeout": 5.0, **changes})


@pytest.fixture
def http() -> Iterator[Http]:
    transport = ConnectionTransport(SessionTransport(requests.Session()))
    yield Http(transport, limits(), Sleeps(), lambda: datetime.now(UTC), random.Random(1))
    transport.close()


def pages(request: Request) -> bytes:
    return response(BODY, "Content-Type: text/xml")


# -- keep-alive ---------------------------------------------------------------------------


def test_pages_share_one_kept_alive_connection(http: Http) -> None:
    with ScriptedHttp(pages) as server:
        for token in ("1", "2", "3"):
            exchange = http.get(server.url + "/oai", {"verb": "ListRecords", "token": token})
            assert exchange.body == BODY
    assert server.connections == 1
    assert [(r.connection, r.number) for r in server.requests] == [(0, 0), (0, 1), (0, 2)]


def identify_then_close(request: Request) -> bytes:
    """Answers a connection's first request, and closes it when a second one arrives on it:
    the server's side of a keep-alive race."""
    if request.number > 0:
        return CLOSE
    body = envelope("http://h/oai", {"verb": "Identify"}, identify_element("http://h/oai"))
    return response(body, "Content-Type: text/xml")


def test_a_kept_connection_closed_by_the_server_is_reopened_and_sent_again() -> None:
    sleeps = Sleeps()
    once = limits(max_retries=0)
    with (
        ScriptedHttp(identify_then_close) as server,
        OAIClient(server.url + "/oai", sleep=sleeps, limits=once) as oai,
    ):
        names = [oai.identify().repository_name for _ in range(3)]
    assert names == ["Test repository"] * 3
    assert sleeps == []  # not a retry: no back-off, and none of the zero retries spent
    assert [(r.connection, r.number) for r in server.requests] == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0)
    ]  # fmt: skip


def test_a_fresh_connection_closed_unanswered_is_a_transient_failure(http: Http) -> None:
    with ScriptedHttp(lambda request: CLOSE) as server, pytest.raises(TransientFetchError):
        http.get(server.url + "/oai", {})
    assert server.connections == 1 + limits().max_retries  # each attempt once, no re-send


# -- bounds -------------------------------------------------------------------------------


def test_a_trickling_server_is_stopped_at_the_deadline() -> None:
    transport = ConnectionTransport(SessionTransport(requests.Session()))
    bounded = limits(timeout=1.0, deadline=1.0, max_retries=0)
    http = Http(transport, bounded, Sleeps(), lambda: datetime.now(UTC), random.Random(1))
    started = time.monotonic()
    with ScriptedHttp(lambda request: trickle(BODY, 0.05, 5.0)) as server:
        with pytest.raises(TransientFetchError, match="over the deadline"):
            http.get(server.url + "/oai", {})
        transport.close()
    assert time.monotonic() - started < 4.5  # the deadline's 1 s, not the trickle's 5 s


def test_an_oversized_body_is_refused_and_its_connection_not_kept() -> None:
    transport = ConnectionTransport(SessionTransport(requests.Session()))
    http = Http(
        transport, limits(max_bytes=1000), Sleeps(), lambda: datetime.now(UTC), random.Random()
    )
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"400\r\n"
        + b"y" * 1024
        + b"\r\n0\r\n\r\n"
    )
    answers = {"/declared": response(BODY), "/chunked": chunked, "/small": response(b"ok")}
    with ScriptedHttp(lambda r: answers[r.line.split()[1]]) as server:
        with pytest.raises(ProtocolError, match=r"response of 5013 bytes exceeds 1000"):
            http.get(server.url + "/declared", {})
        with pytest.raises(ProtocolError, match=r"response exceeds 1000 bytes"):
            http.get(server.url + "/chunked", {})
        assert http.get(server.url + "/small", {}).body == b"ok"
        transport.close()
    assert server.connections == 3


def test_a_body_shorter_than_its_length_is_a_broken_connection() -> None:
    transport = ConnectionTransport(SessionTransport(requests.Session()))
    once = limits(max_retries=0)
    http = Http(transport, once, Sleeps(), lambda: datetime.now(UTC), random.Random())
    with ScriptedHttp(lambda request: lambda conn: conn.sendall(response(BODY)[:-10])) as server:
        with pytest.raises(TransientFetchError, match="connection broken mid-response"):
            http.get(server.url + "/oai", {})
        transport.close()


# -- what is recorded ---------------------------------------------------------------------


def test_the_exchange_records_the_head_as_sent_and_as_received(http: Http) -> None:
    fields = ("Set-Cookie: a=1", "X-Between: b", "Set-Cookie: c=2", "Content-Type: text/xml")
    with ScriptedHttp(lambda request: response(BODY, *fields)) as server:
        exchange = http.get(server.url + "/oai", {"verb": "ListRecords", "set": "a b"})
    (seen,) = server.requests
    assert seen.line == "GET /oai?verb=ListRecords&set=a+b HTTP/1.1"
    assert list(exchange.request_headers) == seen.fields
    assert seen.fields[0] == ("Host", f"127.0.0.1:{server.port}")
    assert ("User-Agent", limits().user_agent) in seen.fields
    assert exchange.url == f"{server.url}/oai?verb=ListRecords&set=a+b"
    assert exchange.response_headers == (
        ("Content-Length", str(len(BODY))),
        *(tuple(f.split(": ", 1)) for f in fields),
    )
    assert exchange.protocol == "HTTP/1.1" and exchange.body == BODY


# -- the environment ----------------------------------------------------------------------


def test_a_proxy_in_the_environment_is_used_through_the_session(
    http: Http, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedHttp(pages) as origin, ScriptedHttp(pages) as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        assert http.get(origin.url + "/oai", {"verb": "Identify"}).body == BODY
    assert origin.requests == []
    assert [r.line for r in proxy.requests] == [f"GET {origin.url}/oai?verb=Identify HTTP/1.1"]


def test_no_proxy_sends_directly(http: Http, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedHttp(pages) as origin, ScriptedHttp(pages) as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        http.get(origin.url + "/oai", {})
        http.get(origin.url + "/oai", {})
    assert proxy.requests == [] and origin.connections == 1 and len(origin.requests) == 2


def test_https_is_verified_against_requests_ca_bundle(
    http: Http, tls: TlsFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls.ca))
    with ScriptedHttp(pages, tls=tls.server_context()) as server:
        assert server.url.startswith("https://")
        assert [http.get(server.url + "/oai", {}).body for _ in range(2)] == [BODY, BODY]
    assert server.connections == 1


def test_https_from_an_unknown_ca_is_refused(http: Http, tls: TlsFiles) -> None:
    with (
        ScriptedHttp(pages, tls=tls.server_context()) as server,
        pytest.raises(PermanentFetchError, match="TLS failure"),
    ):
        http.get(server.url + "/oai", {})
    assert server.requests == []


def test_curl_ca_bundle_is_honoured_too(
    http: Http, tls: TlsFiles, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CURL_CA_BUNDLE", str(tls.ca))
    with ScriptedHttp(pages, tls=tls.server_context()) as server:
        assert http.get(server.url + "/oai", {}).body == BODY
