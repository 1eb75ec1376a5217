"""The fetcher's connection pool and connections (harvester/http/connectionpool.py,
harvester/http/connection.py) against raw loopback servers: framing, kept-alive connections the
server closed, leftovers, limits (tests/test_fetch.py has the time and size limits, through the
fetcher)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from harvester.exceptions import PermanentFetchError, TransientFetchError
from harvester.http.connection import Reply
from harvester.http.connectionpool import ConnectionPool
from harvester.http.limits import FetchSettings, fetch_settings
from harvester.settings import defaults
from tests import hostile
from tests.hostile import RawServer, head, read_head
from tests.loopback_http import ScriptedHttp, TlsFiles, response, tls_files

SETTINGS = replace(fetch_settings(defaults()), read_timeout=5.0, connect_timeout=2.0)
HEADERS = {"User-Agent": "test/1.0"}


async def get(pool: ConnectionPool, url: str, **headers: str) -> Reply:
    deadline_at = asyncio.get_running_loop().time() + 10.0
    return await pool.request("GET", url, headers, 1_000_000, deadline_at)


def run_pool(
    handler: hostile.Handler, paths: list[str], settings: FetchSettings = SETTINGS
) -> tuple[list[Reply], int]:
    """The replies to ``paths`` asked one after another on one pool, and the server's count of
    connections."""

    async def scenario() -> tuple[list[Reply], int]:
        async with RawServer(handler) as server:
            pool = ConnectionPool(settings, HEADERS)
            try:
                return [await get(pool, server.url + p) for p in paths], server.connections
            finally:
                pool.close()

    return asyncio.run(scenario())


def test_a_body_without_length_runs_to_the_close() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("200 OK") + b"all of it")
        await writer.drain()
        writer.close()

    (reply, again), connections = run_pool(handler, ["/", "/"])
    assert (reply.body, reply.truncated) == (b"all of it", None)
    assert again.body == b"all of it" and connections == 2  # such a connection is not kept


def test_a_chunked_body_is_stored_de_chunked() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        chunks = b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
        writer.write(head("200 OK", "Transfer-Encoding: chunked") + chunks)
        await writer.drain()
        await asyncio.sleep(0.5)

    (reply,), _ = run_pool(handler, ["/"])
    assert (reply.body, reply.truncated) == (b"hello, world", None)
    assert (b"Transfer-Encoding", b"chunked") in reply.headers


def test_a_kept_connection_the_server_closed_is_replaced_once() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = writer.get_extra_info("peername")[1]
        await read_head(reader)
        writer.write(head("200 OK", "Content-Length: 5") + str(port).encode()[:5].ljust(5))
        await writer.drain()
        await read_head(reader)  # the next request arrives as the server closes: unanswered
        writer.transport.abort()

    (first, second), connections = run_pool(handler, ["/a", "/b"])
    assert first.status == second.status == 200
    assert connections == 2 and first.body != second.body  # answered on a new connection


def test_a_new_connection_closed_before_any_answer_is_an_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.transport.abort()

    with pytest.raises(TransientFetchError, match="no response from"):
        run_pool(handler, ["/"])


def test_informational_answers_are_skipped() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("100 Continue") + head("103 Early Hints", "Link: </s.css>"))
        writer.write(head("200 OK", "Content-Length: 2") + b"ok")
        await writer.drain()
        await asyncio.sleep(0.5)

    (reply,), _ = run_pool(handler, ["/"])
    assert (reply.status, reply.reason, reply.body) == (200, "OK", b"ok")
    assert [name for name, _ in reply.headers] == [b"Content-Length"]


def test_bytes_after_an_answer_drop_its_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = writer.get_extra_info("peername")[1]
        answer = head("200 OK", "Content-Length: 5") + str(port).encode()[:5].ljust(5)
        await read_head(reader)
        writer.write(answer + answer)  # a second answer nobody asked for
        while True:  # then the server answers each request it reads
            await writer.drain()
            await read_head(reader)
            writer.write(answer)

    (first, second), connections = run_pool(handler, ["/a", "/b"])
    assert connections == 2 and first.body != second.body


def test_connection_close_is_obeyed() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(head("200 OK", "Content-Length: 2", "Connection: close") + b"ok")
        await writer.drain()
        await asyncio.sleep(0.5)

    replies, connections = run_pool(handler, ["/a", "/b", "/c"])
    assert [r.body for r in replies] == [b"ok"] * 3 and connections == 3


def test_kept_alive_answers_share_one_connection() -> None:
    replies, connections = run_pool(hostile.keep_alive(), ["/a", "/b", "/c"])
    ports = {dict(r.headers)[b"X-Client-Port"] for r in replies}
    assert connections == 1 and len(ports) == 1


def heads_into(seen: list[bytes]) -> hostile.Handler:
    """A server that keeps each request's head in ``seen`` and answers it with no body."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_head(reader))
        writer.write(head("200 OK", "Content-Length: 0"))
        await writer.drain()
        await asyncio.sleep(0.2)

    return handler


def test_the_request_is_sent_as_yarl_spells_the_url() -> None:
    seen: list[bytes] = []
    (reply,), _ = run_pool(heads_into(seen), ["/about us/é.html?q=a b#part"])
    request_line = seen[0].split(b"\r\n")[0]
    assert request_line == b"GET /about%20us/%C3%A9.html?q=a+b HTTP/1.1"  # as aiohttp sent it
    assert [name for name, _ in reply.sent] == ["Host", "User-Agent"]


def test_credentials_in_the_url_are_sent_as_basic_authorization() -> None:
    seen: list[bytes] = []

    async def scenario() -> Reply:
        async with RawServer(heads_into(seen)) as server:
            pool = ConnectionPool(SETTINGS, HEADERS)
            try:
                return await get(pool, server.url.replace("//", "//us%20er:p%40ss@") + "/x")
            finally:
                pool.close()

    reply = asyncio.run(scenario())
    lines = seen[0].split(b"\r\n")
    assert lines[0] == b"GET /x HTTP/1.1" and b"Authorization: Basic dXMgZXI6cEBzcw==" in lines
    assert dict(reply.sent)["Authorization"] == "Basic dXMgZXI6cEBzcw=="  # as archived
    assert not any(b"us%20er" in line for line in lines)


def test_a_line_break_in_a_header_value_is_refused() -> None:
    async def scenario() -> None:
        pool = ConnectionPool(SETTINGS, HEADERS)
        await get(pool, "http://127.0.0.1:9/", **{"If-None-Match": '"x"\r\nX-Injected: 1'})

    with pytest.raises(PermanentFetchError, match="line break"):
        asyncio.run(scenario())


def test_at_most_per_host_requests_are_in_flight() -> None:
    busy = [0, 0]  # now, most

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_head(reader)
            busy[0] += 1
            busy[1] = max(busy)
            await asyncio.sleep(0.1)
            busy[0] -= 1
            writer.write(head("200 OK", "Content-Length: 2") + b"ok")
            await writer.drain()

    async def scenario() -> list[Reply]:
        async with RawServer(handler) as server:
            pool = ConnectionPool(replace(SETTINGS, per_host=2, total_connections=16), HEADERS)
            try:
                return await asyncio.gather(*(get(pool, f"{server.url}/{i}") for i in range(8)))
            finally:
                pool.close()

    started = time.monotonic()
    replies = asyncio.run(scenario())
    assert [r.body for r in replies] == [b"ok"] * 8
    assert busy[1] == 2 and time.monotonic() - started >= 0.35  # 4 rounds of 2


def test_idle_connections_are_capped_at_the_total() -> None:
    closed: list[int] = []

    def kept(index: int) -> hostile.Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_head(reader)
            writer.write(head("200 OK", "Content-Length: 2") + b"ok")
            await writer.drain()
            if await reader.read(1) == b"":  # the client closed it
                closed.append(index)

        return handler

    async def scenario() -> None:
        async with RawServer(kept(0)) as a, RawServer(kept(1)) as b, RawServer(kept(2)) as c:
            pool = ConnectionPool(replace(SETTINGS, total_connections=2), HEADERS)
            for server in (a, b, c):
                await get(pool, server.url + "/")
            await _until(lambda: bool(closed))
            assert closed == [0]  # the oldest idle one, once a third was kept
            pool.close()
            await _until(lambda: len(closed) == 3)

    asyncio.run(scenario())
    assert sorted(closed) == [0, 1, 2]


async def _until(check: Callable[[], bool], seconds: float = 10.0) -> None:
    """Poll ``check`` until it holds, ``seconds`` at most (the servers see a close soon)."""
    for _ in range(int(seconds / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return tls_files(tmp_path_factory.mktemp("tls"))


def fetch_twice(url: str) -> list[Reply]:
    async def scenario() -> list[Reply]:
        pool = ConnectionPool(SETTINGS, HEADERS)
        try:
            return [await get(pool, f"{url}/a"), await get(pool, f"{url}/b")]
        finally:
            pool.close()

    return asyncio.run(scenario())


def test_https_is_verified_and_kept_alive(tls: TlsFiles, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca))  # OpenSSL's default trust: our test CA
    with ScriptedHttp(lambda r: response(r.line.encode()), tls.server_context()) as server:
        replies = fetch_twice(server.url)
    assert [r.body for r in replies] == [b"GET /a HTTP/1.1", b"GET /b HTTP/1.1"]
    assert replies[0].peer_ip == "127.0.0.1" and server.connections == 1


def test_https_with_an_untrusted_certificate_is_refused(tls: TlsFiles) -> None:
    with (
        ScriptedHttp(lambda r: response(b"secret"), tls.server_context()) as server,
        pytest.raises(TransientFetchError, match="certificate verify failed"),
    ):
        fetch_twice(server.url)
