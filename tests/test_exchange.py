"""The HTTP exchange value, and the HTTP lines of the WARC records made from it.

Replay tools read a record's HTTP block with warcio's status-line parser in verifying mode
(pywb's loader passes ``['HTTP/1.0', 'HTTP/1.1']`` and refuses anything else with "Expected
Status Line starting with ..."); ``warcio check`` does not verify, so the check is made here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeadersParser

from harvester.http.exchange import PROTOCOLS, HttpExchange, protocol
from tests.conftest import start_provider
from tests.servers import RunningServer
from tests.sites import make_site
from tests.test_harvest import harvest

REPLAY_PARSER = StatusAndHeadersParser(list(PROTOCOLS), verify=True)


def http_lines(out: Path) -> list[tuple[str, str]]:
    """(WARC-Type, first line of the HTTP block) of every request and response record."""
    lines = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh, no_record_parse=True):
                if rec.rec_type in ("request", "response"):
                    first = rec.raw_stream.readline().decode("latin-1").rstrip("\r\n")
                    lines.append((rec.rec_type, first))
    return lines


def replay_status_lines(out: Path) -> list[str]:
    """Every response record's status line, read the way pywb's loader reads it."""
    found = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh, no_record_parse=True):
                if rec.rec_type == "response":
                    parsed = REPLAY_PARSER.parse(rec.raw_stream)  # raises as pywb would
                    found.append(f"{parsed.protocol} {parsed.statusline}")
    return found


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A small site's provider, shared by both strategies' harvests."""
    tmp = tmp_path_factory.mktemp("exchange")
    site = make_site(tmp / "www", pages=8, seed=12)
    with start_provider(site.root, tmp / "index.sqlite", page_size=5) as server:
        yield server


def assert_one_http_version(lines: list[tuple[str, str]]) -> None:
    assert lines
    for kind, line in lines:
        assert line.count("HTTP/") == 1, line
        if kind == "response":
            assert line.split(" ", 1)[0] in PROTOCOLS, line
        else:
            assert line.rsplit(" ", 1)[1] in PROTOCOLS, line


@pytest.mark.parametrize("strategy", ["didl", "get"])
def test_warc_http_lines_carry_exactly_one_http_version(
    provider: RunningServer, tmp_path: Path, strategy: str
) -> None:
    out = tmp_path / "out"
    harvest(provider, out, oai_strategy=strategy)
    lines = http_lines(out)
    assert_one_http_version(lines)
    assert {kind for kind, _ in lines} == {"request", "response"}
    statuses = replay_status_lines(out)
    assert len(statuses) == sum(kind == "response" for kind, _ in lines)
    assert all(s.startswith(("HTTP/1.0 200", "HTTP/1.1 200")) for s in statuses)


def exchange(**changes: object) -> HttpExchange:
    fields: dict[str, object] = {
        "url": "http://127.0.0.1:8/a/b?c=d",
        "method": "GET",
        "protocol": "HTTP/1.1",
        "status": 301,
        "reason": "Moved Permanently",
        "request_headers": (("Host", "127.0.0.1:8"),),
        "response_headers": (("Location", "/z"), ("location", "/y")),
        "body": b"",
        "started": datetime(2024, 5, 1, tzinfo=UTC),
    }
    return HttpExchange(**{**fields, **changes})  # type: ignore[arg-type]


def test_the_exchange_spells_its_lines_once() -> None:
    moved = exchange()
    assert moved.request_line == "GET /a/b?c=d HTTP/1.1"
    assert moved.status_line == "HTTP/1.1 301 Moved Permanently"
    assert exchange(url="http://127.0.0.1:8").request_line == "GET / HTTP/1.1"
    assert moved.header("LOCATION") == "/z" and moved.header("ETag") is None
    assert moved.requested == moved.url
    hop = (moved.url, 301, "http://127.0.0.1:8/z")
    assert exchange(url="http://127.0.0.1:8/z", redirects=(hop,)).requested == moved.url


@pytest.mark.parametrize("wrong", ["1.1", "HTTP/HTTP/1.1", "HTTP/2", ""])
def test_an_exchange_refuses_any_other_protocol_spelling(wrong: str) -> None:
    with pytest.raises(ValueError, match="protocol must be one of"):
        exchange(protocol=wrong)


def test_protocol_of_a_response_version() -> None:
    assert [protocol(1, 0), protocol(1, 1), protocol(1, 9)] == ["HTTP/1.0", "HTTP/1.1", "HTTP/1.1"]


def test_content_is_the_decoded_body_or_a_plain_body() -> None:
    assert exchange(body=b"plain").content == b"plain"
    zipped = exchange(body=b"\x1f\x8b...", response_headers=(("Content-Encoding", "gzip"),))
    with pytest.raises(ValueError, match=r"gzip body of .* was not decoded"):
        _ = zipped.content
    assert replace(zipped, decoded=b"inflated").content == b"inflated"
