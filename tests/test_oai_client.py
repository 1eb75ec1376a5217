"""The OAI-PMH client over real loopback servers: well-behaved, broken and hostile ones.

Most tests share one server process that mounts the small apps of :mod:`tests.oai_apps`
under path prefixes; resets and timeouts come from a raw socket server in this process; the
last tests harvest a generated site from the project's real provider.
"""

from __future__ import annotations

import doctest
import gzip
import os
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

import harvester.oai.dates
from harvester.exceptions import (
    BadResumptionToken,
    NoRecordsMatch,
    OAIError,
    PermanentFetchError,
    ProtocolError,
    TransientFetchError,
)
from harvester.http.limits import OAILimits, oai_limits
from harvester.oai.client import (
    DAY,
    SECONDS,
    EndpointInfo,
    OAIClient,
    format_for_granularity,
    overlap_from,
    parse_oai_datestamp,
    probe,
)
from harvester.settings import defaults
from tests.conftest import start_provider
from tests.oai_apps import envelope, identify_element, item_identifier
from tests.servers import RunningServer, start_wsgi
from tests.sites import Manifest, make_site

OAI = "{http://www.openarchives.org/OAI/2.0/}"
DIDL = "{urn:mpeg:mpeg21:2002:02-DIDL-NS}"
SECRET = "s3cr3t-do-not-leak"
HTML = "<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body><p>Hi<br></p></body></html>"


class Sleeps(list[float]):
    """A sleep that only records what it was asked to wait."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def hostile_documents(secret_path: Path) -> dict[str, str]:
    good = envelope("http://x/oai", {"verb": "Identify"}, identify_element("http://x/oai"))
    text = good.decode()
    lol = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    lol = lol.replace("&lol0;", "lol")
    return {
        "malformed": text.replace("</Identify>", "</Identfy>"),
        "truncated": text[: len(text) // 2],
        "html": HTML,
        "rss": '<?xml version="1.0"?><rss version="2.0"><channel/></rss>',
        "no-date": text.replace("<responseDate>2024-05-10T12:00:00Z</responseDate>", ""),
        "bad-date": text.replace("2024-05-10T12:00:00Z", "10 May 2024"),
        "dunder": text.replace("</Identify>", "<description><__class__/></description></Identify>"),
        "xxe": (
            f'<?xml version="1.0"?><!DOCTYPE OAI-PMH [<!ENTITY xxe SYSTEM "file://{secret_path}">'
            f"]>{text.split('?>', 1)[1].replace('Test repository', '&xxe;')}"
        ),
        "lol": (
            f'<?xml version="1.0"?><!DOCTYPE OAI-PMH [{lol}]>'
            f"{text.split('?>', 1)[1].replace('Test repository', '&lol9;')}"
        ),
    }


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("secret") / "secret.txt"
    path.write_text(SECRET)
    return path


@pytest.fixture(scope="module")
def apps(secret_file: Path) -> Iterator[RunningServer]:
    mounts: dict[str, list[Any]] = {
        "/p": ["provider", {}],
        "/gz": ["provider", {"compress": True}],
        "/badtoken": ["provider", {"bad_token": "page-2"}],
        "/empty": ["provider", {"no_records": True}],
        "/loop-tokens": ["provider", {"loop_after": 2}],
        "/busy-seconds": ["failing", {"failures": 1, "retry_after": "2"}],
        "/busy-date": ["failing", {"failures": 1, "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"}],
        "/busy-forever": ["failing", {"failures": 10**9, "retry_after": "100000"}],
        "/throttled": ["failing", {"failures": 10**9, "status": "429 Too Many Requests"}],
        "/gone": ["failing", {"failures": 10**9, "status": "404 Not Found"}],
        "/huge": ["endless", {"mib": 8}],
        "/huge-declared": ["endless", {"mib": 8, "declare_length": True}],
        "/bomb": ["gzip_bomb", {"mib": 8}],
        "/moved": ["redirect", {"location": "/p"}],
        "/loop": ["redirect", {"location": "/loop"}],
        "/site-oai/oai": ["provider", {}],
        "/site-mod/modoai": ["provider", {}],
        "/site-html/oai": ["document", {"body": HTML, "content_type": "text/html"}],
        "/site-html/modoai": ["provider", {}],
        "/site-html-only/oai": ["document", {"body": HTML, "content_type": "text/html"}],
        "/site-junk/oai": ["document", {"body": "\x00\x01 not xml"}],
        "/site-junk/modoai": ["document", {"body": "<?xml version='1.0'?><OAI-PMH/>"}],
    }
    for name, body in hostile_documents(secret_file).items():
        mounts[f"/doc/{name}"] = ["document", {"body": body}]
    with start_wsgi("tests.oai_apps:mount", {"apps": mounts}, ready_path="/_hits/p") as server:
        yield server


def limits(**changes: Any) -> OAILimits:
    """The default limits with ``changes``, a 5 s timeout unless one is given."""
    return replace(oai_limits(defaults()), **{"timeout": 5.0, **changes})


def client(server: RunningServer, path: str, **kwargs: Any) -> OAIClient:
    kwargs.setdefault("sleep", Sleeps())
    kwargs.setdefault("limits", limits())
    return OAIClient(server.url + path, **kwargs)


def hits(server: RunningServer, prefix: str) -> int:
    return int(requests.get(f"{server.url}/_hits{prefix}", timeout=5).text)


# -- datestamps ---------------------------------------------------------------------------


def test_doctests() -> None:
    result = doctest.testmod(harvester.oai.dates)
    assert result.attempted >= 8 and result.failed == 0


@pytest.mark.parametrize(
    "text",
    ["2024-13-01", "2024-05-10T24:00:00Z", "2024-05-10T12:00Z", "20240510", "", "２０２４-05-10"],
)
def test_bad_datestamps_are_protocol_errors(text: str) -> None:
    with pytest.raises(ProtocolError):
        parse_oai_datestamp(text)


moments = st.datetimes(
    min_value=datetime(1, 1, 3), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@given(moments, st.sampled_from([DAY, SECONDS]))
def test_format_then_parse_truncates_to_the_granularity(moment: datetime, gran: str) -> None:
    text = format_for_granularity(moment, gran)
    parsed = parse_oai_datestamp(text)
    assert (
        timedelta(0)
        <= moment - parsed
        < (timedelta(days=1) if gran == DAY else timedelta(seconds=1))
    )
    assert len(text) == len(gran)


@given(moments, st.sampled_from([DAY, SECONDS]))
def test_overlap_reaches_back_one_unit(moment: datetime, gran: str) -> None:
    previous = format_for_granularity(moment, SECONDS)
    start = parse_oai_datestamp(overlap_from(previous, gran))
    unit = timedelta(days=1) if gran == DAY else timedelta(seconds=1)
    assert parse_oai_datestamp(previous) - 2 * unit < start <= parse_oai_datestamp(previous) - unit


# -- a well-behaved provider --------------------------------------------------------------


def test_lists_every_page_with_its_token(apps: RunningServer) -> None:
    with client(apps, "/p") as oai:
        pages = list(oai.list_identifiers())
    assert [p.token for p in pages] == ["page-1", "page-2", None]
    assert [p.cursor for p in pages] == [0, 2, 4]
    assert {p.complete_list_size for p in pages} == {6}
    assert {p.response_date for p in pages} == {"2024-05-10T12:00:00Z"}
    headers = [h for p in pages for h in p.headers]
    assert [h.identifier for h in headers] == [item_identifier(n) for n in range(6)]
    assert [h.deleted for h in headers] == [False, True, False, False, False, False]
    assert headers[2].datestamp == "2024-05-03T10:00:00Z"
    assert headers[2].set_specs == ("text", "text:html")


def test_a_new_client_resumes_from_a_saved_token(apps: RunningServer) -> None:
    with client(apps, "/p") as first:
        pages = first.list_identifiers()
        saved = next(pages).token
    assert saved == "page-1"
    with client(apps, "/p") as second:
        rest = list(second.list_identifiers(resumption_token=saved))
    ids = [h.identifier for p in rest for h in p.headers]
    assert ids == [item_identifier(n) for n in range(2, 6)]


def test_a_token_excludes_selective_arguments(apps: RunningServer) -> None:
    with client(apps, "/p") as oai, pytest.raises(ValueError):
        next(oai.list_identifiers(resumption_token="page-1", from_="2024-01-01"))


def test_sickles_own_iterator_runs_on_the_safe_harvest(apps: RunningServer) -> None:
    with client(apps, "/p") as oai:
        ids = [h.identifier for h in oai.sickle.ListIdentifiers(metadataPrefix="oai_dc")]
    assert ids == [item_identifier(n) for n in range(6)]
    with client(apps, "/badtoken") as oai, pytest.raises(BadResumptionToken):
        list(oai.sickle.ListIdentifiers(metadataPrefix="oai_dc"))


def test_identify_small_provider(apps: RunningServer) -> None:
    with client(apps, "/p") as oai:
        info = oai.identify()
    assert info == EndpointInfo(
        endpoint=apps.url + "/p",
        base_url=apps.url + "/p",
        repository_name="Test repository",
        granularity=SECONDS,
        deleted_record="persistent",
        earliest_datestamp="2024-01-01T00:00:00Z",
        protocol_version="2.0",
        compression=("gzip", "deflate"),
    )


def test_raw_records_keep_the_compressed_body(apps: RunningServer) -> None:
    with client(apps, "/gz", limits=limits(user_agent="test-agent/1.0")) as oai:
        pages = list(oai.list_records_raw(metadata_prefix="oai_dc"))
    assert len(pages) == 3 and pages[-1].token is None
    exchange = pages[0].exchange
    assert exchange.status == 200 and exchange.method == "GET"
    assert exchange.url == apps.url + "/gz?verb=ListRecords&metadataPrefix=oai_dc"
    assert exchange.header("content-encoding") == "gzip"
    assert exchange.body[:2] == b"\x1f\x8b" and gzip.decompress(exchange.body) == exchange.content
    sent = dict(exchange.request_headers)
    assert sent["User-Agent"] == "test-agent/1.0"
    assert "gzip" in sent["Accept-Encoding"] and "identity" in sent["Accept-Encoding"]
    assert sent["Host"] == apps.url.removeprefix("http://")
    first, deleted = pages[0].records
    assert first.header.identifier == item_identifier(0)
    assert first.metadata is not None and first.metadata.tag.endswith("}dc")
    assert first.metadata.findtext("{http://purl.org/dc/elements/1.1/}title") == "Item 0"
    assert deleted.header.deleted and deleted.metadata is None


def test_a_token_loop_is_a_protocol_error(apps: RunningServer) -> None:
    with client(apps, "/loop-tokens") as oai:
        pages = oai.list_identifiers()
        assert [next(pages).token for _ in range(2)] == ["page-1", "page-2"]
        with pytest.raises(ProtocolError, match="resumptionToken"):
            next(pages)


# -- OAI errors -------------------------------------------------------------------------


def test_bad_resumption_token_is_raised_for_that_page(apps: RunningServer) -> None:
    with client(apps, "/badtoken") as oai:
        pages = oai.list_identifiers()
        assert next(pages).token == "page-1"
        assert next(pages).token == "page-2"
        with pytest.raises(BadResumptionToken) as caught:
            next(pages)
    assert caught.value.retryable and "/badtoken" in str(caught.value)


def test_no_records_match_is_distinguishable(apps: RunningServer) -> None:
    with client(apps, "/empty") as oai, pytest.raises(NoRecordsMatch) as caught:
        next(oai.list_identifiers(from_="2030-01-01"))
    assert isinstance(caught.value, OAIError) and not caught.value.retryable


# -- transport failures -------------------------------------------------------------------


def test_retry_after_in_seconds_is_honoured(apps: RunningServer) -> None:
    sleeps = Sleeps()
    with client(apps, "/busy-seconds", sleep=sleeps) as oai:
        assert oai.identify().repository_name == "Test repository"
    assert sleeps == [2.0]
    assert hits(apps, "/busy-seconds") == 2


def test_retry_after_as_http_date_is_honoured(apps: RunningServer) -> None:
    sleeps = Sleeps()
    now = datetime(2015, 10, 21, 7, 27, 57, tzinfo=UTC)
    with client(apps, "/busy-date", sleep=sleeps, clock=lambda: now) as oai:
        oai.identify()
    assert sleeps == [3.0]


def test_endless_503_gives_up_after_max_retries(apps: RunningServer) -> None:
    sleeps = Sleeps()
    started = time.monotonic()
    oai = client(apps, "/busy-forever", sleep=sleeps, limits=limits(max_retries=3, max_wait=7.0))
    with oai, pytest.raises(TransientFetchError) as caught:
        oai.identify()
    assert sleeps == [7.0, 7.0, 7.0]  # Retry-After: 100000, capped at max_wait
    assert hits(apps, "/busy-forever") == 4
    assert "503" in str(caught.value) and caught.value.retry_after == 100000.0
    assert time.monotonic() - started < 5


def test_429_backs_off_exponentially_with_jitter(apps: RunningServer) -> None:
    sleeps = Sleeps()
    oai = client(
        apps, "/throttled", sleep=sleeps, limits=limits(max_retries=4, backoff=1.0, max_wait=5.0)
    )
    with oai, pytest.raises(TransientFetchError):
        oai.identify()
    assert len(sleeps) == 4 and hits(apps, "/throttled") == 5
    for attempt, delay in enumerate(sleeps):
        ceiling = min(5.0, 2.0**attempt)
        assert ceiling / 2 <= delay <= ceiling


def test_404_is_permanent_and_not_retried(apps: RunningServer) -> None:
    sleeps = Sleeps()
    with client(apps, "/gone", sleep=sleeps) as oai, pytest.raises(PermanentFetchError) as caught:
        oai.identify()
    assert caught.value.status == 404 and sleeps == [] and hits(apps, "/gone") == 1


def test_redirects_are_followed_and_loops_end(apps: RunningServer) -> None:
    with client(apps, "/moved") as oai:
        assert oai.identify().base_url == apps.url + "/p"
    with client(apps, "/loop") as oai, pytest.raises(PermanentFetchError, match="redirects"):
        oai.identify()


class ScriptedServer:
    """A raw HTTP server in a thread; connection *n* gets ``actions[n]`` (the last repeats).

    ``ok`` answers an Identify; ``reset`` sends half a response then a TCP RST; ``silent``
    reads the request and never answers.
    """

    def __init__(self, actions: list[str]) -> None:
        self.actions = actions
        self.connections = 0
        self.stopping = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            if self.stopping.is_set():
                conn.close()
                return
            action = self.actions[min(self.connections, len(self.actions) - 1)]
            self.connections += 1
            with conn:
                self._answer(conn, action)

    def _answer(self, conn: socket.socket, action: str) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(4096) or b"\r\n\r\n"
        body = envelope(self.url, {"verb": "Identify"}, identify_element(self.url))
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: {len(body)}\r\n"
        if action == "ok":
            conn.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        elif action == "reset":
            conn.sendall(head.encode() + b"\r\n" + body[:100])
            time.sleep(0.05)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            self.stopping.wait(10)

    def close(self) -> None:
        self.stopping.set()
        with socket.create_connection(self.listener.getsockname(), timeout=1):
            pass  # wakes the accept() that closing the listener alone would not
        self.thread.join(5)
        self.listener.close()


def test_connection_reset_mid_response_is_retried() -> None:
    server = ScriptedServer(["reset", "ok"])
    sleeps = Sleeps()
    try:
        with OAIClient(server.url + "/oai", sleep=sleeps, limits=limits()) as oai:
            assert oai.identify().repository_name == "Test repository"
    finally:
        server.close()
    assert server.connections == 2 and len(sleeps) == 1


def test_a_silent_server_times_out() -> None:
    server = ScriptedServer(["silent"])
    started = time.monotonic()
    try:
        oai = OAIClient(server.url, sleep=Sleeps(), limits=limits(timeout=0.3, max_retries=1))
        with oai, pytest.raises(TransientFetchError, match="gave up after 2 attempts"):
            oai.identify()
    finally:
        server.close()
    assert time.monotonic() - started < 5


# -- bad and hostile documents -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("malformed", "not well-formed"),
        ("truncated", "not well-formed"),
        ("html", "DOCTYPE"),
        ("rss", "not an OAI-PMH response"),
        ("no-date", "without responseDate"),
        ("bad-date", "bad responseDate"),
    ],
)
def test_broken_documents_are_protocol_errors(apps: RunningServer, name: str, reason: str) -> None:
    with client(apps, f"/doc/{name}") as oai, pytest.raises(ProtocolError, match=reason) as caught:
        oai.identify()
    assert f"{apps.url}/doc/{name}?verb=Identify" in str(caught.value)


def test_hostile_tag_names_in_identify_are_harmless(apps: RunningServer) -> None:
    with client(apps, "/doc/dunder") as oai:
        assert oai.identify().repository_name == "Test repository"


def test_xxe_is_refused_and_the_secret_never_read(
    apps: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    with client(apps, "/doc/xxe") as oai, pytest.raises(ProtocolError, match="DOCTYPE") as caught:
        oai.identify()
    assert SECRET not in str(caught.value) and SECRET not in caplog.text
    # The document is a working XXE: a trusting parser does read the secret.
    trusting = etree.XMLParser(resolve_entities=True, load_dtd=True)
    hostile = requests.get(apps.url + "/doc/xxe", timeout=5).content
    assert SECRET in etree.tostring(etree.fromstring(hostile, trusting)).decode()


def test_billion_laughs_is_refused_quickly(apps: RunningServer) -> None:
    started = time.monotonic()
    with client(apps, "/doc/lol") as oai, pytest.raises(ProtocolError, match="DOCTYPE"):
        oai.identify()
    assert time.monotonic() - started < 10  # an expansion of its 10^9 laughs takes far longer


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/huge", "response exceeds 1048576 bytes"),
        ("/huge-declared", "response of 8388658 bytes exceeds"),
        ("/bomb", "body decodes to more than 1048576 bytes"),
    ],
)
def test_oversized_responses_are_refused(apps: RunningServer, path: str, reason: str) -> None:
    started = time.monotonic()
    oai = client(apps, path, limits=limits(max_bytes=2**20))
    with oai, pytest.raises(ProtocolError, match=reason):
        oai.identify()
    assert time.monotonic() - started < 5


def test_the_parser_never_uses_sickles_own(apps: RunningServer) -> None:
    with client(apps, "/p") as oai:
        response = oai.sickle.harvest(verb="Identify")
    assert response.xml is response.xml  # one parsed tree, not a fresh parse per access
    assert response.xml.tag == OAI + "OAI-PMH" and "Test repository" in response.raw


# -- discovery -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("site", "found"),
    [
        ("/site-oai", "/site-oai/oai"),
        ("/site-mod/", "/site-mod/modoai"),
        ("/site-html", "/site-html/modoai"),
        ("/site-html-only", None),
        ("/site-junk", None),
        ("/nothing-here", None),
    ],
)
def test_probe(apps: RunningServer, site: str, found: str | None) -> None:
    info = probe(apps.url + site, sleep=Sleeps(), limits=limits(max_retries=0))
    assert (info and info.endpoint) == (found and apps.url + found)


def test_probe_gives_up_on_unreachable_sites() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert probe(f"http://127.0.0.1:{port}", sleep=Sleeps(), limits=limits(max_retries=1)) is None


# -- the project's provider ----------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return make_site(tmp_path_factory.mktemp("oai-site") / "www", pages=40, seed=5)


@pytest.fixture(scope="module")
def provider(site: Manifest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    index = tmp_path_factory.mktemp("oai-index") / "index.sqlite"
    with start_provider(site.root, index, page_size=7, records_page_size=20) as server:
        yield server


def duplicates(ids: list[str]) -> list[str]:
    return sorted(i for i, n in Counter(ids).items() if n > 1)


def public_urls(server: RunningServer, site: Manifest) -> set[str]:
    return {f"{server.url}/{quote(os.fsencode(p), safe='/')}" for p in site.public}


def test_provider_lists_exactly_the_public_urls(provider: RunningServer, site: Manifest) -> None:
    with OAIClient(provider.url + "/oai") as oai:
        pages = list(oai.list_identifiers())
    ids = [h.identifier for p in pages for h in p.headers]
    assert set(ids) == public_urls(provider, site)
    assert all(p.token for p in pages[:-1]) and pages[-1].token is None
    assert duplicates(ids) == []
    assert [p.cursor for p in pages] == list(range(0, len(site.public), 7))
    assert all(p.complete_list_size == len(site.public) for p in pages)


def test_provider_list_resumes_in_a_new_client(provider: RunningServer, site: Manifest) -> None:
    with OAIClient(provider.url + "/oai") as first:
        pages = first.list_identifiers()
        done = [next(pages), next(pages)]  # then the harvester "crashes"
    saved = done[-1].token
    assert saved is not None
    with OAIClient(provider.url + "/oai") as second:
        rest = list(second.list_identifiers(resumption_token=saved))
    ids = [h.identifier for p in done + rest for h in p.headers]
    assert set(ids) == public_urls(provider, site)
    assert duplicates(ids) == []


def test_provider_identify(provider: RunningServer) -> None:
    with OAIClient(provider.url + "/oai") as oai:
        info = oai.identify()
    assert info.granularity == SECONDS and info.deleted_record == "persistent"
    assert info.base_url == provider.url + "/oai" and info.protocol_version == "2.0"
    assert probe(provider.url) == info


def test_provider_raw_didl_records(provider: RunningServer, site: Manifest) -> None:
    with OAIClient(provider.url + "/oai") as oai:
        pages = list(oai.list_records_raw(metadata_prefix="oai_didl"))
    assert len(pages) > 1
    exchange = pages[0].exchange
    assert exchange.status == 200 and "verb=ListRecords" in exchange.url
    if exchange.header("Content-Encoding") == "gzip":
        assert gzip.decompress(exchange.body) == exchange.content
    else:
        assert exchange.body == exchange.content
    assert etree.fromstring(exchange.content).tag == OAI + "OAI-PMH"
    records = [r for p in pages for r in p.records]
    assert {r.header.identifier for r in records} == public_urls(provider, site)
    for record in records:
        assert record.metadata is not None and record.metadata.tag == DIDL + "DIDL"
        assert record.metadata.get("DIDLDocumentId") == record.header.identifier
