"""Range requests on the site's files, answered as real nginx answers them (the same files,
the same requests): 206 with Content-Range, 416 for what cannot be satisfied, the whole file
where nginx gives it, and If-Range. Both of the provider's file paths are asked: the fast
WSGI gate (``/big.bin``) and the Flask view (``/sub/``, a folder's ``index.html``). Several
ranges make one ``multipart/byteranges`` body, byte for byte nginx's but for the boundary."""

from __future__ import annotations

import http.client
import os
import re
import sys
from collections.abc import Iterator

import pytest

from bench.crawl import serving
from tests.servers import start_command

SIZE = 100_000
RANGES = [
    "bytes=0-9", "bytes=10-", "bytes=-5", "bytes=99990-200000", "bytes=100000-", "bytes=5-2",
    "bytes=abc", "items=0-5", "bytes= 0-9", "bytes=0-9 ", "bytes=-0", "bytes=0-99999",
    "bytes=-200000", "bytes=0-9, 5-", "Bytes=0-9", "bytes=1-2,", "bytes=,1-2", "bytes=- 5",
    "bytes=99999-99999", "bytes=123456789012345678901234567890-",
    "bytes=0-0,5-9", "bytes=-5, 0-1, 10-19", "bytes=0-1,200000-,3-4", "bytes=50-,0-9",
]  # fmt: skip
Answer = tuple[int, str | None, str | None, str | None, str | None, bytes]
BOUNDARY = re.compile(r"boundary=(\d+)")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(nginx's URL, the provider's URL), both serving the same folder."""
    tmp = tmp_path_factory.mktemp("ranges")
    root = tmp / "www"
    (root / "sub").mkdir(parents=True)
    data = os.urandom(SIZE)
    (root / "big.bin").write_bytes(data)
    (root / "sub" / "index.html").write_bytes(data)
    (root / "index.html").write_text("<p>hello</p>\n")
    argv = [sys.executable, "-m", "server_module.cli", "serve", str(root), "--port", "{port}"]
    argv += ["--index", str(tmp / "idx.sqlite"), "--workers", "1", "--threads", "2"]
    with serving(root, tmp / "nginx") as nginx, start_command(argv) as provider:
        yield nginx, provider.url


def ask(url: str, method: str, path: str, headers: dict[str, str]) -> Answer:
    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        body = response.read()
        fields = [response.getheader(name) for name in ("Content-Range", "Content-Length")]
        accept = response.getheader("Accept-Ranges")
        kind = response.getheader("Content-Type")
        if response.status == 416:  # the body (nginx's page of HTML) is the server's own
            return response.status, fields[0], None, accept, None, b""
        found = BOUNDARY.search(kind or "")
        if found:  # each server draws its own boundary
            kind = kind.replace(found[1], "B")
            body = body.replace(found[1].encode(), b"B")
        return response.status, *fields, accept, kind, body
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/big.bin", "/sub/"])
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_ranges_are_answered_as_nginx_answers_them(
    servers: tuple[str, str], method: str, path: str
) -> None:
    nginx, provider = servers
    statuses = set()
    for field in RANGES:
        ours = ask(provider, method, path, {"Range": field})
        theirs = ask(nginx, method, path, {"Range": field})
        assert ours == theirs, field
        statuses.add(ours[0])
    assert statuses == {200, 206, 416}


@pytest.mark.parametrize("path", ["/big.bin", "/sub/"])
def test_if_range_keeps_the_range_only_for_the_same_version(
    servers: tuple[str, str], path: str
) -> None:
    results = []
    for url in servers:
        conn = http.client.HTTPConnection(url.split("//")[1], timeout=30)
        conn.request("HEAD", path)
        fields = conn.getresponse()
        etag, modified = fields.getheader("ETag"), fields.getheader("Last-Modified")
        conn.close()
        assert etag and modified
        conditions = [etag, "W/" + etag, '"other"', modified, "Thu, 01 Jan 1970 00:00:00 GMT"]
        results.append(
            [ask(url, "GET", path, {"Range": "bytes=0-9", "If-Range": c}) for c in conditions]
        )
    ours, theirs = results
    assert ours == theirs
    assert [answer[0] for answer in ours] == [206, 200, 200, 206, 200]


def test_several_ranges_are_one_multipart_body(servers: tuple[str, str]) -> None:
    _, provider = servers
    status, _, _, _, kind, body = ask(provider, "GET", "/big.bin", {"Range": "bytes=0-0,5-9"})
    assert (status, kind) == (206, "multipart/byteranges; boundary=B")
    assert body.count(b"\r\n--B") == 3 and body.endswith(b"\r\n--B--\r\n")
