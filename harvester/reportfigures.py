"""The report's figures and the numbers they plot (``report.py``), from :mod:`reportdata`.

Each figure is a matplotlib ``Figure`` (no pyplot: no global state, no display) rendered as
inline SVG, so the page needs nothing from outside itself. The numbers each figure plots are
computed here by plain functions, and the page shows them as tables too.
"""

from __future__ import annotations

import io
import statistics
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from harvester.reportdata import Capture, ReportData

TOP = 12  # MIME types, hosts and reasons shown; the rest add up to "other"


def mime_table(data: ReportData) -> list[tuple[str, int, int]]:
    """(MIME type, captures, bytes) of responses and resources, most captures first."""
    counts: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for c in data.captures:
        if c.kind != "revisit":
            counts[c.mime or "unknown"] += 1
            sizes[c.mime or "unknown"] += c.size
    return [(m, n, sizes[m]) for m, n in counts.most_common()]


def host_table(data: ReportData) -> list[tuple[str, int, float, int | None]]:
    """(host, requests, requests per second over its busy span, median fetch ms)."""
    times: dict[str, list[datetime]] = {}
    for at, host in data.requests:
        times.setdefault(host, []).append(at)
    fetch_ms: dict[str, list[int]] = {}
    for f in data.fetches:
        fetch_ms.setdefault(f.host, []).append(f.ms)
    rows = []
    for host, moments in sorted(times.items(), key=lambda kv: -len(kv[1])):
        span = max((moments[-1] - moments[0]).total_seconds(), 1.0)
        ms = fetch_ms.get(host)
        rows.append(
            (host, len(moments), len(moments) / span, int(statistics.median(ms)) if ms else None)
        )
    return rows


def archived_share(data: ReportData) -> list[tuple[datetime, float]]:
    """After each capture: distinct URLs archived over distinct URLs discovered (in scope:
    on a host something was captured from), a crawl's coverage as it went."""
    hosts = {c.host for c in data.captures}
    found = sorted((at, url) for url, at in data.discovered.items() if _host(url) in hosts)
    archived: set[str] = set()
    discovered: set[str] = set()
    points = []
    i = 0
    for c in data.captures:
        while i < len(found) and found[i][0] <= c.at:
            discovered.add(found[i][1])
            i += 1
        archived.add(c.url)
        discovered.add(c.url)
        points.append((c.at, len(archived) / len(discovered)))
    return points


def _host(url: str) -> str:
    return urlsplit(url).netloc


# -- figures ------------------------------------------------------------------------------


def _figure(height: float = 3.2) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(8, height), layout="constrained")


def _svg(fig: Any) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]


def over_time(captures: Sequence[Capture]) -> str:
    """Resources archived over time (cumulative) and the bytes archived per second."""
    fig = _figure(4.5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    moments = [c.at for c in captures]
    top.plot(moments, range(1, len(moments) + 1), drawstyle="steps-post")
    top.set_ylabel("resources archived")
    bins = _bins(moments)
    rates = [0.0] * len(bins)
    for c in captures:
        rates[_bin_of(bins, c.at)] += c.size
    width = (bins[1] - bins[0]).total_seconds() if len(bins) > 1 else 1.0
    bottom.bar(bins, [r / width for r in rates], width=width / 86400, align="edge")
    bottom.set_ylabel("bytes / s")
    fig.autofmt_xdate()
    return _svg(fig)


def _bins(moments: Sequence[datetime], count: int = 40) -> list[datetime]:
    if not moments:
        return []
    start, end = moments[0], moments[-1]
    step = max((end - start) / count, timedelta(seconds=1))
    return [start + step * i for i in range(int((end - start) / step) + 1)]


def _bin_of(bins: Sequence[datetime], at: datetime) -> int:
    step = bins[1] - bins[0] if len(bins) > 1 else None
    return 0 if step is None else min(int((at - bins[0]) / step), len(bins) - 1)


def bars(rows: Sequence[tuple[str, float]], xlabel: str) -> str:
    """A horizontal bar chart, largest on top."""
    shown = list(rows[:TOP])
    if len(rows) > TOP:
        shown.append(("other", sum(v for _k, v in rows[TOP:])))
    fig = _figure(0.4 * len(shown) + 1.2)
    ax = fig.subplots()
    ax.barh([k for k, _v in reversed(shown)], [v for _k, v in reversed(shown)])
    ax.set_xlabel(xlabel)
    return _svg(fig)


def hosts(data: ReportData) -> str:
    """Per host: requests per second, and the fetch times of its crawled URLs."""
    rows = host_table(data)[:TOP]
    fig = _figure(0.5 * len(rows) + 1.5)
    left, right = fig.subplots(1, 2)
    names = [r[0] for r in rows]
    left.barh(names, [r[2] for r in rows])
    left.set_xlabel("requests / s")
    ms = {h: [f.ms for f in data.fetches if f.host == h] for h in names}
    right.boxplot([ms[h] or [0] for h in names], orientation="horizontal", tick_labels=names)
    right.set_xlabel("fetch time (ms)")
    return _svg(fig)


def share(points: Sequence[tuple[datetime, float]]) -> str:
    fig = _figure()
    ax = fig.subplots()
    ax.plot([p[0] for p in points], [100 * p[1] for p in points])
    ax.set_ylabel("% of discovered URLs archived")
    ax.set_ylim(0, 100)
    fig.autofmt_xdate()
    return _svg(fig)
