"""``python -m bench firstpage [--files 100000] [--samples 25] [--page-size 1000]``

A list's first page as independent OAI-PMH clients get it, from the provider and, side by
side, from the ``oaipmh`` BatchingServer baseline, both served as ``bench provider`` serves
them (gunicorn, one sync worker; :mod:`bench.provider`):

- ``sickle``: ``Sickle(url).harvest(verb="ListIdentifiers", metadataPrefix="oai_dc")``, its
  own ``requests`` call, which negotiates gzip as requests does by default;
- the ``oaipmh`` package's client: ``Client(url).makeRequest(...)``, its urllib POST;

each timed from the call to the whole body received (and decoded); and the CPU time each
server's worker spent per first page. ``bench provider`` reports the same rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from oaipmh.client import Client
from oaipmh.metadata import MetadataRegistry
from sickle import Sickle

from bench.harness import Report
from bench.workers import workers_cpu_s
from tests.servers import RunningServer

COLUMNS = ["metric", "ours", "baseline", "ratio", "target", "met?"]
TARGET_MS = 10
# Each sample finds the worker idle, as a harvest's first request does: the page the
# provider reads ahead after the previous sample's first page is made by then.
PAUSE_S = 0.05
ARGS = {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"}


def sickle_first(url: str) -> float:
    """Seconds for sickle to fetch a first page."""
    started = time.perf_counter()
    Sickle(url).harvest(**ARGS)
    return time.perf_counter() - started


def oaipmh_first(url: str) -> float:
    """Seconds for the ``oaipmh`` client to fetch a first page."""
    client = Client(url, MetadataRegistry())
    started = time.perf_counter()
    client.makeRequest(**ARGS)
    return time.perf_counter() - started


CLIENTS: dict[str, Callable[[str], float]] = {"sickle": sickle_first, "oaipmh client": oaipmh_first}


@dataclass
class FirstPageTimes:
    """Seconds per client and contender, and each contender's worker CPU seconds in all."""

    seconds: dict[str, dict[str, list[float]]]
    cpu_s: dict[str, float]
    samples: int

    def ms(self, client: str, contender: str) -> float:
        return 1000 * statistics.median(self.seconds[client][contender])

    def cpu_ms(self, contender: str) -> float:
        """Worker CPU per first page (the provider's includes the page it reads ahead)."""
        return 1000 * self.cpu_s[contender] / (self.samples * len(CLIENTS))


def measure(servers: dict[str, RunningServer], samples: int) -> FirstPageTimes:
    """``samples`` first pages per client and server, alternating, each after a pause, after
    one of each not counted (a new worker's first request imports and opens what it needs)."""
    for fetch in CLIENTS.values():
        for server in servers.values():
            fetch(f"{server.url}/oai")
    seconds: dict[str, dict[str, list[float]]] = {c: {s: [] for s in servers} for c in CLIENTS}
    cpu = {name: -workers_cpu_s(server.process.pid) for name, server in servers.items()}
    for _ in range(samples):
        for client, fetch in CLIENTS.items():
            for name, server in servers.items():
                time.sleep(PAUSE_S)
                seconds[client][name].append(fetch(f"{server.url}/oai"))
    time.sleep(PAUSE_S)
    for name, server in servers.items():
        cpu[name] += workers_cpu_s(server.process.pid)
    return FirstPageTimes(seconds, cpu, samples)


def rows(times: FirstPageTimes, size: str) -> list[list[object]]:
    """Report rows: each client's first page, then the workers' CPU per first page."""
    out: list[list[object]] = []
    for client in CLIENTS:
        ours, base = times.ms(client, "ours"), times.ms(client, "baseline")
        met = "yes" if ours < TARGET_MS else "no"
        out.append([f"first page, {size}, {client} (ms)", ours, base, ours / base,
                    f"< {TARGET_MS}", met])  # fmt: skip
    ours, base = times.cpu_ms("ours"), times.cpu_ms("baseline")
    out.append([f"worker CPU per first page, {size} (ms)", ours, base, ours / base, "", ""])
    return out


def run(argv: list[str]) -> Report:
    from bench import provider  # which uses this module for its own rows

    parser = argparse.ArgumentParser(prog="python -m bench firstpage", description=__doc__)
    parser.add_argument("--files", type=int, default=100_000, help="site size (files)")
    parser.add_argument("--samples", type=int, default=25, help="first pages per client")
    parser.add_argument("--page-size", type=int, default=1000)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    provider.OUT.mkdir(parents=True, exist_ok=True)
    docroot, index = provider.site_of(args.files), provider.OUT / f"site-{args.files}.sqlite"
    total = provider.current_index(docroot, index)
    mine = provider.ours(docroot, index, args.page_size)
    peer = provider.baseline(docroot, index, args.page_size)
    with provider.serving(mine, "ours-first") as ours, provider.serving(peer, "baseline") as base:
        times = measure({"ours": ours, "baseline": base}, args.samples)
    report = Report("firstpage", COLUMNS, rows(times, f"page {args.page_size:,}"))
    report.figures = {
        "files": total,
        "sickle_ms": round(times.ms("sickle", "ours"), 2),
        "oaipmh_client_ms": round(times.ms("oaipmh client", "ours"), 2),
        "cpu_ms": round(times.cpu_ms("ours"), 3),
    }
    report.notes += [
        f"{total:,} items, page size {args.page_size:,}; medians of {args.samples} samples per "
        f"client and server, alternating, each after a {PAUSE_S * 1000:g} ms pause; "
        "ratio = ours / baseline (lower is better).",
        f"Load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
    ]
    return report
