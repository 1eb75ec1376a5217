"""A hypothesis fuzz of the provider's request handling (``tests/fuzz_requests.py`` draws the
requests, ``tests/fuzz_oracle.py`` judges the answers): in process through the Flask test
client for most examples, and over a real socket to the real WSGI server for raw bytes in the
query string. The long run is ``bench/fuzz.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server_module.oai.tokens import MAX_TOKEN_LENGTH
from tests.conftest import start_provider
from tests.fuzz_oracle import OAI, Corpus, Wire, check, expected
from tests.fuzz_provider import (
    BASE,
    GUNICORN_ENV,
    corpus_of,
    fuzz_app,
    gunicorn_refusal,
    serve_argv,
    socket_corpus,
)
from tests.fuzz_requests import send_app, send_socket, wires
from tests.schemas import assert_valid
from tests.servers import RunningServer, start_command, wait_analysed
from tests.sites import Manifest, make_site

FUZZ = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def fuzz_site(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return make_site(tmp_path_factory.mktemp("fuzz") / "www", pages=30, seed=5)


@pytest.fixture(scope="module")
def client(fuzz_site: Manifest, tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    index = tmp_path_factory.mktemp("fuzz-index") / "index.sqlite"
    return fuzz_app(fuzz_site, index).test_client()


@pytest.fixture(scope="module")
def corpus(client: FlaskClient) -> Corpus:
    return corpus_of(client)


@pytest.fixture(scope="module")
def server(
    fuzz_site: Manifest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    index = tmp_path_factory.mktemp("fuzz-gunicorn") / "index.sqlite"
    argv = serve_argv(fuzz_site.root, index)
    with start_command(argv, env=GUNICORN_ENV, ready_path="/oai?verb=Identify") as running:
        wait_analysed(index)  # its plugins' analyses restamp records: done before the fuzz
        yield running


@pytest.fixture(scope="module")
def dev_server(
    fuzz_site: Manifest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    index = tmp_path_factory.mktemp("fuzz-werkzeug") / "index.sqlite"
    with start_provider(fuzz_site.root, index, page_size=7, records_page_size=5) as running:
        yield running


@settings(max_examples=300, **FUZZ)
@given(data=st.data())
def test_in_process_answers_obey_the_oracle(
    client: FlaskClient, corpus: Corpus, data: st.DataObject
) -> None:
    wire = data.draw(wires(corpus), label="wire")
    check(*send_app(client, wire), wire, corpus)


@settings(max_examples=60, **FUZZ)
@given(data=st.data())
def test_raw_bytes_to_gunicorn_obey_the_oracle(server: RunningServer, data: st.DataObject) -> None:
    """gunicorn answers a request line it refuses itself, with a 4xx; all else obeys."""
    corpus = socket_corpus(server)
    wire = data.draw(wires(corpus, wire_safe=True), label="wire")
    status, content_type, body = send_socket(server.host, server.port, wire)
    refusal = gunicorn_refusal(wire)
    if refusal:
        assert status == refusal, body[:200]
    else:
        check(status, content_type, body, wire, corpus)


@settings(max_examples=30, **FUZZ)
@given(data=st.data())
def test_raw_bytes_to_werkzeug_obey_the_oracle(
    dev_server: RunningServer, data: st.DataObject
) -> None:
    """werkzeug's development server re-encodes a raw byte above 0x7F in the request line as
    UTF-8 (``_wsgi_encoding_dance`` of the latin-1 path) before the application sees it, so
    those bytes go percent-encoded here; gunicorn, above, refuses them (400)."""
    corpus = socket_corpus(dev_server)
    wire = data.draw(wires(corpus, wire_safe=True, raw_high=False), label="wire")
    check(*send_socket(dev_server.host, dev_server.port, wire), wire, corpus)


def test_a_request_too_large_is_refused_at_once_over_a_socket(dev_server: RunningServer) -> None:
    """The provider refuses a body over ``max_request_bytes`` unread; werkzeug then drains
    it until the end of the stream, which the socket client marks by half-closing after its
    request (a drawn body that large once made the test above wait out its timeout)."""
    wire = Wire("POST", b"", b"verb=Identify&x=" + b"A" * 9000)
    started = time.monotonic()
    status, _content_type, body = send_socket(dev_server.host, dev_server.port, wire, timeout=5)
    assert status == 200 and b'code="badArgument"' in body and b"too large" in body
    assert time.monotonic() - started < 5


def test_the_corpus_covers_every_list_page(corpus: Corpus, fuzz_site: Manifest) -> None:
    assert len(corpus.identifiers) == len(fuzz_site.public)
    assert corpus.prefixes == ("oai_dc", "http_header", "oai_didl", "premis")
    assert {verb for verb, _ in corpus.tokens} == {"ListIdentifiers", "ListRecords"}
    assert "text:html" in corpus.sets


@pytest.mark.parametrize(
    "query, decoded",
    [
        (b"verb=Identify&x=%FF", [("verb", "Identify"), ("x", "%FF")]),
        (b"verb=Identify&x=\xff", [("verb", "Identify"), ("x", "%FF")]),
        (b"verb=Ident%69fy&a+b=%C3%A9\xc3\xa9", [("verb", "Identify"), ("a b", "éé")]),
        (b"=&verb", [("", ""), ("verb", "")]),
    ],
)
def test_the_oracle_reads_arguments_as_the_spec_does(
    query: bytes, decoded: list[tuple[str, str]]
) -> None:
    assert Wire("GET", query, None).pairs() == decoded


def test_the_oracle_names_the_outcomes_the_spec_allows(corpus: Corpus) -> None:
    token = corpus.tokens[0]
    some_id = sorted(corpus.identifiers)[0]
    assert expected([("verb", "Identify")], corpus) == {None}
    assert expected([("verb", "Identify"), ("verb", "Identify")], corpus) == {"badVerb"}
    assert expected([("verb", "Identify"), ("set", "x")], corpus) == {"badArgument"}
    assert expected([("verb", token[0]), ("resumptionToken", token[1])], corpus) == {None}
    assert expected([("verb", "ListRecords"), ("resumptionToken", token[1] + "A")], corpus) == {
        "badResumptionToken"
    }
    get = [("verb", "GetRecord"), ("identifier", some_id), ("metadataPrefix", "marc21")]
    assert expected(get, corpus) == {"cannotDisseminateFormat"}
    lst = [("verb", "ListIdentifiers"), ("metadataPrefix", "oai_dc"), ("from", "2024-01-02")]
    assert expected([*lst, ("until", "2024-01-01")], corpus) == {"badArgument"}
    assert expected([*lst, ("until", "2024-01-02")], corpus) == {None, "noRecordsMatch"}


# -- regressions the fuzz found ------------------------------------------------------------


CAFE = b"/files/caf\xe9.txt"  # the site's file named in latin-1; its identifier has "caf%E9"


@pytest.mark.parametrize(
    "spelled, body, code, identifier",
    [
        (b"verb=Identify&x=\xff", None, "badArgument", None),
        (b"verb=Identify&\x80=Identify", None, "badArgument", None),
        (
            b"verb=GetRecord&metadataPrefix=oai_dc&identifier={base}" + CAFE,
            None,
            None,
            "{base}" + CAFE.decode("latin-1"),
        ),
        (b"", b"verb=Identify", None, None),
        (b"", b"verb=ListMetadataFormats&identifier=\xc3", "idDoesNotExist", "\xc3"),
    ],
    ids=["GET value", "GET name", "GET identifier", "POST plain", "POST identifier"],
)
def test_bytes_that_are_not_utf8_are_read_as_their_percent_spelling(
    client: FlaskClient,
    server: RunningServer,
    spelled: bytes,
    body: bytes | None,
    code: str | None,
    identifier: str | None,
) -> None:
    """Found by the fuzz: a raw byte that is not UTF-8 made werkzeug's strict decoding fail,
    a 500 in a query (which WSGI servers other than gunicorn pass on); in a form body the
    whole form was dropped, so a POST answered badVerb.
    Such a byte means its ``%XX`` spelling, as the identifiers of such file names have it."""
    method = "GET" if body is None else "POST"
    ways = [(BASE, lambda wire: send_app(client, wire))]
    if body is not None:  # gunicorn refuses such a query itself (400, RFC 9112 §3.2)
        ways.append((server.url, lambda wire: send_socket(server.host, server.port, wire)))
    for base, send in ways:
        wire = Wire(method, spelled.replace(b"{base}", base.encode()), body)
        status, content_type, answer = send(wire)
        assert (status, content_type) == (200, "text/xml; charset=UTF-8"), answer[:200]
        root = assert_valid(answer)
        codes = [e.get("code") for e in root.iterfind(f"{OAI}error")]
        assert codes == ([code] if code else [])
        if identifier is not None:
            spelling = identifier.replace("{base}", base).replace("\xe9", "%E9")
            spelling = spelling.replace("\xc3", "%C3")
            assert root.find(f"{OAI}request").get("identifier") == spelling


def test_gunicorn_carries_a_get_of_the_longest_token(server: RunningServer) -> None:
    """Found by the fuzz: gunicorn's default limit_request_line (4094 bytes) answered 414
    to a GET whose resumptionToken the provider accepts (up to MAX_TOKEN_LENGTH)."""
    token = b"A" * MAX_TOKEN_LENGTH
    wire = Wire("GET", b"verb=ListRecords&resumptionToken=" + token, None)
    status, _type, body = send_socket(server.host, server.port, wire)
    assert status == 200, body[:200]
    assert assert_valid(body).find(f"{OAI}error").get("code") == "badResumptionToken"
