"""CPU a response of HTTP/1.1 clients fetching the same files from the project's provider.

``python -m bench httpclients [--files 20000] [--runs 3] [--connections 8]``

Why the fetcher has its own transport (:mod:`harvester.http.connectionpool`): each contender GETs
every file of a ``tests.sites.make_site`` site, served by ``oai-provider serve`` (gunicorn,
2 workers x 4 threads) over loopback, on ``--connections`` kept-alive connections in one
process, reading each body whole. The runs alternate. CPU is the process's (``process_time``)
over the fetches alone, so interpreter start-up and imports do not count.

- ``aiohttp``: a ``ClientSession`` (the fetcher's transport until session 10);
- ``h11``: asyncio protocols parsing with h11 (the pure-Python parser of httpcore and uvicorn);
- ``httptools``: asyncio protocols parsing with httptools (llhttp), nothing else: the floor;
- ``fetcher``: :class:`harvester.http.fetch.Fetcher`, robots.txt, retries, limits and all.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from urllib.parse import quote, urlsplit

import aiohttp
import h11
import httptools

from bench.harness import Report
from bench.harvest import OUT, fresh_site, providing
from harvester.http.fetch import Fetcher
from harvester.http.limits import fetch_settings
from harvester.settings import defaults

COLUMNS = ["client", "CPU ms a response", "ratio to httptools", "responses/s", "answered 200"]
Job = Callable[[list[str]], Awaitable[int]]


async def _workers(urls: list[str], connections: int, one: Callable[[str], Awaitable[int]]) -> int:
    """``one(url)`` (its status) for every URL, ``connections`` at a time; how many were 200."""
    todo, ok = iter(urls), 0

    async def worker() -> None:
        nonlocal ok
        for url in todo:
            status = await one(url)  # (``ok += await ...`` would read ``ok`` before the wait)
            ok += status == 200

    await asyncio.gather(*(worker() for _ in range(connections)))
    return ok


async def with_aiohttp(urls: list[str], connections: int) -> int:
    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=connections)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def one(url: str) -> int:
            async with session.get(url, allow_redirects=False) as response:
                await response.read()
                return response.status

        return await _workers(urls, connections, one)


async def with_fetcher(urls: list[str], connections: int) -> int:
    settings = replace(fetch_settings(defaults()), per_host=connections)
    async with Fetcher(replace(settings, total_connections=connections)) as fetcher:

        async def one(url: str) -> int:
            return (await fetcher.fetch(url)).status

        return await _workers(urls, connections, one)


class _Bare(asyncio.Protocol):
    """One kept-alive connection: a request at a time, its answer parsed by ``parse``."""

    def __init__(self, parser: str) -> None:
        self.waiter: asyncio.Future[int] | None = None
        self.transport: asyncio.Transport | None = None
        self.h11 = h11.Connection(h11.CLIENT) if parser == "h11" else None
        self.llhttp = None if self.h11 else httptools.HttpResponseParser(self)
        self.body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.llhttp is not None:
            self.llhttp.feed_data(data)
            return
        assert self.h11 is not None
        self.h11.receive_data(data)
        while (event := self.h11.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.Response):
                self.status = event.status_code
            elif isinstance(event, h11.Data):
                self.body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.h11.start_next_cycle()
                self._done(self.status)
                return

    def on_body(self, body: bytes) -> None:  # httptools
        self.body.append(body)

    def on_message_complete(self) -> None:  # httptools
        assert self.llhttp is not None
        self._done(self.llhttp.get_status_code())

    def _done(self, status: int) -> None:
        waiter, self.waiter, self.body = self.waiter, None, []
        if waiter is not None:
            waiter.set_result(status)

    async def get(self, host: str, target: str) -> int:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        fields = [("Host", host), ("User-Agent", "bench"), ("Accept-Encoding", "identity")]
        if self.h11 is not None:
            request = h11.Request(method="GET", target=target, headers=fields)
            self.transport.write(self.h11.send(request) + (self.h11.send(h11.EndOfMessage())))
        else:
            head = "".join(f"{k}: {v}\r\n" for k, v in fields)
            self.transport.write(f"GET {target} HTTP/1.1\r\n{head}\r\n".encode())
        return await self.waiter


async def with_bare(urls: list[str], connections: int, parser: str) -> int:
    parts = urlsplit(urls[0])
    host, port = parts.hostname or "", parts.port or 80
    loop = asyncio.get_running_loop()
    pool = [(await loop.create_connection(lambda: _Bare(parser), host, port))[1]
            for _ in range(connections)]  # fmt: skip
    todo, ok = iter(urls), 0

    async def worker(conn: _Bare) -> None:
        nonlocal ok
        for url in todo:
            status = await conn.get(parts.netloc, url[len(f"{parts.scheme}://{parts.netloc}") :])
            ok += status == 200

    await asyncio.gather(*(worker(conn) for conn in pool))
    for conn in pool:
        assert conn.transport is not None
        conn.transport.close()
    return ok


def contenders(connections: int) -> dict[str, Job]:
    return {
        "aiohttp": lambda urls: with_aiohttp(urls, connections),
        "h11": lambda urls: with_bare(urls, connections, "h11"),
        "httptools": lambda urls: with_bare(urls, connections, "httptools"),
        "fetcher": lambda urls: with_fetcher(urls, connections),
    }


def measure(job: Job, urls: list[str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, answered 200) of one run of ``job``."""
    wall, cpu = time.perf_counter(), time.process_time()
    ok = asyncio.run(job(urls))
    return time.process_time() - cpu, time.perf_counter() - wall, ok


def run(argv: list[str]) -> Report:
    parser = argparse.ArgumentParser(prog="python -m bench httpclients", description=__doc__)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    manifest = fresh_site("httpclients", args.files)
    files = sorted(manifest.public)
    results: dict[str, list[tuple[float, float, int]]] = {}
    with providing(manifest.root, 2, 4) as provider:
        urls = [f"{provider.url}/{quote(os.fsencode(name))}" for name in files]
        jobs = contenders(args.connections)
        for _ in range(args.runs):
            for name, job in jobs.items():
                results.setdefault(name, []).append(measure(job, urls))
    floor = statistics.median(cpu for cpu, _, _ in results["httptools"])
    report = Report("httpclients", COLUMNS)
    for name, runs in results.items():
        cpu = statistics.median(c for c, _, _ in runs)
        wall = statistics.median(w for _, w, _ in runs)
        report.rows.append([name, cpu / len(urls) * 1000, cpu / floor, len(urls) / wall,
                            min(ok for _, _, ok in runs)])  # fmt: skip
        report.figures[f"{name}_cpu_ms"] = round(cpu / len(urls) * 1000, 4)
    report.notes += [
        f"{len(urls):,} files (the site's public ones) on {args.connections} connections, "
        f"medians of {args.runs} alternating runs; site in {OUT}.",
        f"Load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
    ]
    return report
