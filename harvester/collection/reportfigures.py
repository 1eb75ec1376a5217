"""The report's figures and the numbers they plot (``report.py``), from :mod:`reportdata`.

Each figure is a matplotlib ``Figure`` (no pyplot: no global state, no display) rendered as
inline SVG, so the page needs nothing from outside itself. The numbers each figure plots are
computed here by plain functions, and the page shows them as tables too. Byte counts and byte
axes are in binary units (:func:`human_bytes`: KiB, MiB…), never raw or in ``1e7`` notation;
the SVG keeps its text as text. Over time, each run is a series of its own, against the
seconds since it started, so a small incremental run shows beside a first full one.
"""

from __future__ import annotations

import bisect
import io
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from harvester.collection.reportdata import Capture, ReportData
from harvester.run.runlog import Run

TOP = 12  # MIME types, hosts and reasons shown; the rest add up to "other"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(count: float) -> str:
    """A byte count in binary units, as people read it.

    >>> human_bytes(0), human_bytes(1023), human_bytes(37359), human_bytes(67067302)
    ('0 B', '1023 B', '36.5 KiB', '64.0 MiB')
    """
    value, unit = float(count), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.0f} B" if unit == 0 else f"{value:.1f} {_UNITS[unit]}"


@dataclass(frozen=True)
class RunSeries:
    """The captures of one run, and when it started (its first capture without a run log)."""

    label: str
    start: datetime
    captures: list[Capture]

    @property
    def bytes(self) -> int:
        return sum(c.size for c in self.captures)

    @property
    def seconds(self) -> float:
        if not self.captures:
            return 0.0
        return max(0.0, (self.captures[-1].at - self.start).total_seconds())


def run_series(captures: Sequence[Capture], runs: Sequence[Run]) -> list[RunSeries]:
    """The captures (in time order) split by run: each goes to the last run started before
    it; captures before every logged run (or with no run log) make a series of their own."""
    starts = sorted((_parse(r.start), r.start) for r in runs if r.start)
    moments = [at for at, _label in starts]
    found: dict[str, RunSeries] = {}
    for c in captures:
        index = bisect.bisect_right(moments, c.at) - 1
        at, label = starts[index] if index >= 0 else (c.at, "before the run log")
        found.setdefault(label, RunSeries(label, at, [])).captures.append(c)
    return list(found.values())


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


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
    on a host something was captured from), a crawl's coverage as it went. An error answer
    (a 404 kept for replay) is a URL discovered, not archived."""
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
        if c.status is None or c.status < 400:
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
    from matplotlib import rc_context

    out = io.StringIO()
    with rc_context({"svg.fonttype": "none"}):  # text stays text: searchable, selectable
        fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]


def over_time(series: Sequence[RunSeries]) -> str:
    """Per run: resources archived (cumulative) and bytes archived per second, against the
    seconds since the run started; one line each (``gid`` ``run-N``), labelled by its start."""
    fig = _figure(4.5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    for number, one in enumerate(series):
        elapsed = [(c.at - one.start).total_seconds() for c in one.captures]
        label = one.label
        top.plot(
            elapsed,
            range(1, len(elapsed) + 1),
            drawstyle="steps-post",
            label=label,
            gid=f"run-{number}",
        )
        bins = _bins(elapsed)
        rates = [0.0] * len(bins)
        for seconds, c in zip(elapsed, one.captures, strict=True):
            rates[_bin_of(bins, seconds)] += c.size
        width = bins[1] - bins[0] if len(bins) > 1 else 1.0
        bottom.step(
            bins, [r / width for r in rates], where="post", label=label, gid=f"rate-{number}"
        )
    top.set_ylabel("resources archived")
    bottom.set_ylabel("archived per second")
    bottom.set_xlabel("seconds since the run started")
    _byte_axis(bottom.yaxis, "/s")
    if len(series) > 1:
        top.legend(title="run started", fontsize="small")
    return _svg(fig)


def _byte_axis(axis: Any, suffix: str = "") -> None:
    """Tick labels of a byte axis in binary units, no offset or scientific notation."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 4, 8, 10]))
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: human_bytes(value) + suffix))


def _bins(elapsed: Sequence[float], count: int = 40) -> list[float]:
    """The starts of up to ``count`` bins of at least a second over ``elapsed``."""
    if not elapsed:
        return []
    end = max(elapsed)
    step = max(end / count, 1.0)
    return [step * i for i in range(int(end / step) + 1)]


def _bin_of(bins: Sequence[float], at: float) -> int:
    step = bins[1] - bins[0] if len(bins) > 1 else None
    return 0 if step is None else min(int(at / step), len(bins) - 1)


def bars(rows: Sequence[tuple[str, float]], xlabel: str, *, in_bytes: bool = False) -> str:
    """A horizontal bar chart, largest on top; ``in_bytes``: its axis in binary units."""
    shown = list(rows[:TOP])
    if len(rows) > TOP:
        shown.append(("other", sum(v for _k, v in rows[TOP:])))
    fig = _figure(0.4 * len(shown) + 1.2)
    ax = fig.subplots()
    ax.barh([k for k, _v in reversed(shown)], [v for _k, v in reversed(shown)])
    ax.set_xlabel(xlabel)
    if in_bytes:
        _byte_axis(ax.xaxis)
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
