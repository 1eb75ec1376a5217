"""The fetcher against real servers on loopback: a well-behaved site and hostile sockets."""

from __future__ import annotations

import asyncio
import random
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest

from harvester.clock import utcnow
from harvester.exceptions import PermanentFetchError, TransientFetchError
from harvester.http.exchange import HttpExchange
from harvester.http.fetch import Fetcher
from harvester.http.limits import FetchSettings, fetch_settings
from harvester.settings import defaults
from tests import hostile
from tests.hostile import RawServer
from tests.servers import RunningServer, free_port, start_wsgi

T = TypeVar("T")

ROBOTS = """\
User-agent: *
Disallow: /private
Crawl-delay: 2.5
Sitemap: https://example.org/sitemap.xml
"""
AGENT_ROBOTS = """\
User-agent: coop-archive-harvester
Disallow: /

User-agent: *
Allow: /
"""
FAST = replace(
    fetch_settings(defaults()), retries=3, deadline=10.0, read_timeout=5.0, connect_timeout=2.0
)
RAW = replace(FAST, obey_robots=False, retries=0)
# A fetch cut by a limit of 0.5-0.6 s ends well before this; one the limit missed runs into
# the hostile server's own 10 s limit. Wide, so that a loaded machine does not fail it.
CUT_SOON = 6.0


class Sleeps:
    """An injected sleep that records the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def run_with(
    settings: FetchSettings,
    scenario: Callable[[Fetcher], Awaitable[T]],
    *,
    sleeps: Sleeps | None = None,
    clock: Callable[[], datetime] = utcnow,
) -> T:
    async def main() -> T:
        fetcher = Fetcher(settings, sleep=sleeps or Sleeps(), clock=clock, rng=random.Random(1))
        async with fetcher:
            return await scenario(fetcher)

    return asyncio.run(main())


def fetch_one(url: str, settings: FetchSettings = FAST, **kwargs: object) -> HttpExchange:
    return run_with(settings, lambda f: f.fetch(url, **kwargs))  # type: ignore[arg-type]


def count(server: RunningServer, path: str) -> int:
    """How many requests the site saw for ``path`` (asked outside the fetcher)."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    with direct.open(f"{server.url}/count?path={path}", timeout=5) as answer:
        return int(answer.read())


def serve(**kwargs: object) -> Iterator[RunningServer]:
    with start_wsgi("tests.hostile:site", kwargs, ready_path="/count?path=/") as server:
        yield server


@pytest.fixture(scope="module")
def website() -> Iterator[RunningServer]:
    yield from serve(robots=ROBOTS)


@pytest.fixture(scope="module")
def robots_404() -> Iterator[RunningServer]:
    yield from serve(robots_status=404)


@pytest.fixture(scope="module")
def robots_500() -> Iterator[RunningServer]:
    yield from serve(robots_status=500)


@pytest.fixture(scope="module")
def robots_for_agent() -> Iterator[RunningServer]:
    yield from serve(robots=AGENT_ROBOTS)


# --- ordinary exchanges --------------------------------------------------------------------


def test_200_records_the_exchange(website: RunningServer) -> None:
    before = datetime.now(UTC)
    result = fetch_one(f"{website.url}/hello")
    assert (result.status, result.reason, result.protocol) == (200, "OK", "HTTP/1.1")
    assert result.body == hostile.HELLO
    assert result.url == result.requested == f"{website.url}/hello"
    assert result.peer_ip == "127.0.0.1"
    assert result.redirects == () and result.truncated is None
    assert before <= result.started <= datetime.now(UTC) and result.elapsed > 0
    sent = dict(result.request_headers)
    assert sent["Host"] == f"127.0.0.1:{website.port}"
    assert sent["User-Agent"] == FAST.user_agent == result.header("X-Seen-User-Agent")
    assert sent["Accept-Encoding"] == "identity" == result.header("X-Seen-Accept-Encoding")
    dups = [(k, v) for k, v in result.response_headers if k == "X-Dup"]
    assert dups == [("X-Dup", "first"), ("X-Dup", "second")]


def test_keep_alive_reuses_one_connection() -> None:
    async def scenario() -> tuple[list[HttpExchange], int]:
        async with RawServer(hostile.keep_alive()) as server, Fetcher(RAW) as fetcher:
            results = [await fetcher.fetch(f"{server.url}/{i}") for i in range(3)]
            return results, server.connections

    results, connections = asyncio.run(scenario())
    assert connections == 1
    assert len({r.header("X-Client-Port") for r in results}) == 1


def test_conditional_get_gives_304(website: RunningServer) -> None:
    result = fetch_one(f"{website.url}/hello", headers={"If-None-Match": hostile.ETAG})
    assert (result.status, result.body) == (304, b"")
    assert ("If-None-Match", hostile.ETAG) in result.request_headers


def test_head_has_headers_and_no_body(website: RunningServer) -> None:
    result = fetch_one(f"{website.url}/hello", method="HEAD")
    assert (result.method, result.status, result.body, result.truncated) == ("HEAD", 200, b"", None)
    assert result.header("Content-Length") == str(len(hostile.HELLO))


def test_4xx_is_a_result_not_an_error(website: RunningServer) -> None:
    assert fetch_one(f"{website.url}/gone").status == 410
    assert fetch_one(f"{website.url}/nowhere").status == 404


def test_fetch_before_open_is_refused() -> None:
    with pytest.raises(RuntimeError, match="not open"):
        asyncio.run(Fetcher(FAST).fetch("http://127.0.0.1:9/"))


# --- redirects -----------------------------------------------------------------------------


def test_redirect_chain_is_recorded(website: RunningServer) -> None:
    result = fetch_one(f"{website.url}/redirect/2")
    assert result.status == 200 and result.body == hostile.HELLO
    assert result.requested == f"{website.url}/redirect/2"
    assert result.url == f"{website.url}/hello", "the URL the body came from"
    assert result.redirects == (
        (f"{website.url}/redirect/2", 302, f"{website.url}/redirect/1"),
        (f"{website.url}/redirect/1", 302, f"{website.url}/redirect/0"),
        (f"{website.url}/redirect/0", 302, f"{website.url}/hello"),
    )


def test_redirect_not_followed_is_returned(website: RunningServer) -> None:
    result = fetch_one(f"{website.url}/redirect/0", follow_redirects=False)
    assert (result.status, result.header("Location")) == (302, "/hello")
    assert result.redirects == ()


def test_redirect_loop_is_permanent(website: RunningServer) -> None:
    with pytest.raises(PermanentFetchError, match="loop") as caught:
        fetch_one(f"{website.url}/loop/a")
    assert caught.value.status == 301


def test_redirect_limit(website: RunningServer) -> None:
    settings = replace(FAST, max_redirects=3)
    assert len(fetch_one(f"{website.url}/redirect/2", settings).redirects) == 3
    with pytest.raises(PermanentFetchError, match="more than 3 redirects"):
        fetch_one(f"{website.url}/redirect/3", settings)


# --- retries -------------------------------------------------------------------------------


def test_retry_after_seconds_is_honoured(website: RunningServer) -> None:
    sleeps = Sleeps()
    url = f"{website.url}/flaky/seconds?fails=1&retry_after=1"
    result = run_with(FAST, lambda f: f.fetch(url), sleeps=sleeps)
    assert (result.status, result.body) == (200, b"finally")
    assert sleeps.delays == [1.0]


def test_retry_after_http_date_is_honoured(website: RunningServer) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    when = "Wed,%2021%20Oct%202015%2007:28:03%20GMT"
    url = f"{website.url}/flaky/date?fails=2&retry_after={when}"
    sleeps = Sleeps()
    result = run_with(FAST, lambda f: f.fetch(url), sleeps=sleeps, clock=lambda: now)
    assert result.status == 200 and result.started == now
    assert sleeps.delays == [3.0, 3.0]


def test_503_forever_gives_up_after_retries(website: RunningServer) -> None:
    sleeps = Sleeps()
    with pytest.raises(TransientFetchError, match="503") as caught:
        run_with(FAST, lambda f: f.fetch(f"{website.url}/flaky/forever"), sleeps=sleeps)
    assert caught.value.retry_after is None
    assert count(website, "/flaky/forever") == FAST.retries + 1
    low_high = [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0)]  # equal jitter around 0.5 * 2**n
    assert [lo <= d <= hi for d, (lo, hi) in zip(sleeps.delays, low_high, strict=True)] == [
        True
    ] * 3


def test_retry_after_beyond_max_backoff_stops_at_once(website: RunningServer) -> None:
    sleeps = Sleeps()
    url = f"{website.url}/flaky/long?retry_after=3600"
    with pytest.raises(TransientFetchError) as caught:
        run_with(FAST, lambda f: f.fetch(url), sleeps=sleeps)
    assert caught.value.retry_after == 3600.0
    assert sleeps.delays == [] and count(website, "/flaky/long") == 1


def test_connection_refused_is_transient_after_retries() -> None:
    sleeps = Sleeps()
    url = f"http://127.0.0.1:{free_port()}/"
    with pytest.raises(TransientFetchError, match="ConnectionRefusedError fetching"):
        run_with(replace(RAW, retries=2), lambda f: f.fetch(url), sleeps=sleeps)
    assert len(sleeps.delays) == 2


# --- time limits ---------------------------------------------------------------------------


def raw(handler: hostile.Handler, settings: FetchSettings = RAW, path: str = "/") -> HttpExchange:
    async def scenario() -> HttpExchange:
        async with RawServer(handler) as server:
            fetcher = Fetcher(settings, sleep=Sleeps())
            async with fetcher:
                return await fetcher.fetch(server.url + path)

    return asyncio.run(scenario())


def test_the_request_line_archived_is_the_one_sent() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await hostile.read_head(reader))
        writer.write(hostile.head("200 OK", "Content-Length: 0"))
        await writer.drain()

    result = raw(handler, path="/a b/../%7euser/?q=x y")
    sent = seen[0].split(b"\r\n")[0].decode("ascii")
    assert sent == result.request_line == "GET /~user/?q=x+y HTTP/1.1"  # yarl's spelling


def test_trickle_below_min_rate_is_cut() -> None:
    settings = replace(RAW, min_rate=1000.0, rate_grace=0.5)
    started = time.monotonic()
    result = raw(hostile.trickle(b"x" * 100, interval=0.2), settings)
    assert result.truncated == "time"
    assert 1 <= len(result.body) < 10 and set(result.body) == {ord("x")}
    # Cut near the grace's end, not at the server's 10 s limit: bounds a loaded machine keeps.
    assert time.monotonic() - started < CUT_SOON and result.elapsed < CUT_SOON


def test_deadline_cuts_a_steady_body() -> None:
    settings = replace(RAW, min_rate=1.0, deadline=0.6)
    result = raw(hostile.trickle(b"y" * 2000, interval=0.05, step=10), settings)
    assert result.truncated == "time"
    assert 10 <= len(result.body) < 2000
    assert 0.5 <= result.elapsed < CUT_SOON  # the body would take 10 s


def test_no_headers_before_deadline_is_transient() -> None:
    started = time.monotonic()
    with pytest.raises(TransientFetchError, match="no response headers"):
        raw(hostile.silent(60.0), replace(RAW, deadline=0.5, read_timeout=60.0))
    assert time.monotonic() - started < CUT_SOON


def test_stall_after_headers_without_body_is_transient() -> None:
    started = time.monotonic()
    with pytest.raises(TransientFetchError, match="before its first byte"):
        raw(hostile.stall_after_headers(60.0), replace(RAW, read_timeout=0.5))
    assert time.monotonic() - started < CUT_SOON


# --- size limits and malformed responses ---------------------------------------------------


def test_oversized_body_is_cut_at_max_size(website: RunningServer) -> None:
    settings = replace(FAST, max_size=100_000)
    result = fetch_one(f"{website.url}/big/300000", settings)
    assert (result.truncated, len(result.body)) == ("length", 100_000)
    exact = fetch_one(f"{website.url}/big/100000", settings)
    assert (exact.truncated, len(exact.body)) == (None, 100_000)


def test_gzip_sent_anyway_is_stored_raw(website: RunningServer) -> None:
    result = fetch_one(f"{website.url}/gzip", replace(FAST, max_size=1_000_000))
    assert result.header("Content-Encoding") == "gzip"
    assert result.body == hostile.GZIP_BODY and result.truncated is None
    assert len(result.body) < 100_000  # the 8 MiB it inflates to never existed here


def test_lying_content_length_keeps_what_arrived() -> None:
    result = raw(hostile.lying_length(1000, b"partial body"))
    assert (result.truncated, result.body) == ("disconnect", b"partial body")


def test_reset_mid_body_keeps_what_arrived() -> None:
    result = raw(hostile.lying_length(1000, b"before the reset", reset=True))
    assert (result.truncated, result.body) == ("disconnect", b"before the reset")


def test_close_before_any_body_is_transient() -> None:
    with pytest.raises(TransientFetchError, match="disconnect"):
        raw(hostile.lying_length(1000, b""))


def wait_for_report(sent: list[int], seconds: float = 3.0) -> int:
    deadline = time.monotonic() + seconds
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    return sent[0] if sent else -1


def test_endless_headers_fail_fast() -> None:
    sent: list[int] = []
    started = time.monotonic()
    with pytest.raises(PermanentFetchError, match="malformed response"):
        raw(hostile.endless_headers(sent))
    assert time.monotonic() - started < CUT_SOON
    assert 0 < wait_for_report(sent) < 50_000  # the client hung up long before the end


def test_endless_header_line_fails_fast() -> None:
    sent: list[int] = []
    started = time.monotonic()
    with pytest.raises(PermanentFetchError, match="malformed response"):
        raw(hostile.endless_header_line(sent))
    assert time.monotonic() - started < CUT_SOON
    assert 0 < wait_for_report(sent) < 4 * 1024 * 1024


def test_headers_over_total_size_are_refused() -> None:
    settings = replace(RAW, max_header_size=8 * 1024)
    with pytest.raises(PermanentFetchError, match="exceed 8192 bytes"):
        raw(hostile.fat_headers(count=20, size=1000), settings)
    assert raw(hostile.fat_headers(count=5, size=1000), settings).body == b"ok"


# --- robots.txt ----------------------------------------------------------------------------


def test_robots_disallow_is_permanent(website: RunningServer) -> None:
    with pytest.raises(PermanentFetchError, match="disallowed by robots"):
        fetch_one(f"{website.url}/private/page")
    assert fetch_one(f"{website.url}/private/page", replace(FAST, obey_robots=False)).status == 200


def test_robots_is_read_once_per_host(website: RunningServer) -> None:
    before = count(website, "/robots.txt")

    async def many(fetcher: Fetcher) -> list[HttpExchange]:
        urls = [f"{website.url}/hello", f"{website.url}/redirect/1", f"{website.url}/nowhere"] * 3
        return list(await asyncio.gather(*(fetcher.fetch(u) for u in urls)))

    assert {r.status for r in run_with(FAST, many)} == {200, 404}
    assert count(website, "/robots.txt") - before == 1


def test_robots_crawl_delay_and_sitemaps(website: RunningServer) -> None:
    async def read(fetcher: Fetcher) -> tuple[bool, bool, float | None, list[str]]:
        robots = fetcher.robots
        return (
            await robots.allowed(f"{website.url}/hello"),
            await robots.allowed(f"{website.url}/private/x"),
            await robots.crawl_delay(f"{website.url}/hello"),
            await robots.sitemaps(f"{website.url}/"),
        )

    assert run_with(FAST, read) == (True, False, 2.5, ["https://example.org/sitemap.xml"])


def test_robots_group_for_our_agent(robots_for_agent: RunningServer) -> None:
    with pytest.raises(PermanentFetchError, match="disallowed"):
        fetch_one(f"{robots_for_agent.url}/hello")
    other = replace(FAST, user_agent="somebody-else/1.0")
    assert fetch_one(f"{robots_for_agent.url}/hello", other).status == 200


def test_robots_404_allows_all(robots_404: RunningServer) -> None:
    assert fetch_one(f"{robots_404.url}/private/page").status == 200


def test_robots_500_disallows_for_now(robots_500: RunningServer) -> None:
    sleeps = Sleeps()

    async def scenario(fetcher: Fetcher) -> bool:
        with pytest.raises(TransientFetchError, match="unreachable") as caught:
            await fetcher.fetch(f"{robots_500.url}/hello")
        assert caught.value.retry_after == pytest.approx(FAST.robots_error_ttl, abs=5)
        return await fetcher.robots.allowed(f"{robots_500.url}/hello")

    assert run_with(FAST, scenario, sleeps=sleeps) is False
    assert sleeps.delays == []  # robots.txt is not retried: the short expiry is the retry


def test_robots_expires(website: RunningServer) -> None:
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    before = count(website, "/robots.txt")

    async def day_apart(fetcher: Fetcher) -> None:
        await fetcher.fetch(f"{website.url}/hello")
        now[0] += timedelta(hours=23)
        await fetcher.fetch(f"{website.url}/hello")
        now[0] += timedelta(hours=2)
        await fetcher.fetch(f"{website.url}/hello")

    run_with(FAST, day_apart, clock=lambda: now[0])
    assert count(website, "/robots.txt") - before == 2
