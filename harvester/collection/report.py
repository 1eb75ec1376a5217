"""A collection report for people: ``harvester report DIR... --to REPORT.html``.

One HTML page that works offline: its style is inline, its plots are inline SVG (matplotlib,
``reportfigures.py``), and it references nothing outside itself: no scripts, no stylesheets,
no images, no links. What it shows and where each number comes from is said in
``reportdata.py``; every plot's numbers are also shown as a table.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from harvester import __version__
from harvester.collection import reportfigures as figures
from harvester.collection.reportdata import ReportData, collect
from harvester.run.runlog import Run

log = logging.getLogger(__name__)

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
td, th { border-bottom: 1px solid #ddd; padding: .2em .8em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
svg { max-width: 100%; height: auto; }
.note { color: #666; }
"""


def write_report(folders: Sequence[Path], target: Path) -> dict[str, Any]:
    """Write the report of the collections in ``folders``; return its headline numbers."""
    data = collect(folders)
    page = render(data, [str(f) for f in folders])
    partial = target.with_name(target.name + ".part")
    partial.write_text(page, encoding="utf-8")
    os.replace(partial, target)
    return headline(data)


def headline(data: ReportData) -> dict[str, Any]:
    return {
        "captures": len(data.captures),
        "bytes": Bytes(sum(c.size for c in data.captures)),
        "warc_files": data.warc_files,
        "failed": data.failure_statuses["failed"],  # still retried: harvester/failures.py
        "gone": data.failure_statuses["gone"],
        "abandoned": data.failure_statuses["abandoned"],
        "crawl": data.crawled,
    }


def render(data: ReportData, names: Sequence[str]) -> str:
    """The whole page."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Collection report: {escape(', '.join(names))}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Collection report</h1><p class='note'>{escape(', '.join(names))}; made {when}"
        f" by coop-archive-harvester {escape(__version__)}.</p>",
        _table(("", "value"), headline(data).items(), "summary"),
        *_over_time(data),
        *_mimes(data),
        *_failures(data),
        *_hosts(data),
        *_share(data),
        *_runs(data),
        "</body></html>",
    ]
    return "\n".join(parts)


def _over_time(data: ReportData) -> list[str]:
    head = "<h2 id='over-time'>Resources archived over time, and throughput, per run</h2>"
    if not data.captures:
        return [head, "<p class='note'>Nothing archived yet.</p>"]
    series = figures.run_series(data.captures, data.runs)
    rows = [(s.label, len(s.captures), Bytes(s.bytes), round(s.seconds, 1)) for s in series]
    return [
        head,
        _figure("over-time", figures.over_time(series)),
        _table(("run started", "captures", "bytes", "seconds"), rows, "over-time"),
    ]


def _mimes(data: ReportData) -> list[str]:
    rows = figures.mime_table(data)
    head = "<h2 id='mime'>MIME types, by count and bytes</h2>"
    if not rows:
        return [head, "<p class='note'>No captures.</p>"]
    return [
        head,
        _figure("mime-count", figures.bars([(m, n) for m, n, _b in rows], "captures")),
        _figure("mime-bytes", figures.bars([(m, b) for m, _n, b in rows], "bytes", in_bytes=True)),
        _table(("MIME type", "captures", "bytes"), [(m, n, Bytes(b)) for m, n, b in rows], "mime"),
    ]


def _failures(data: ReportData) -> list[str]:
    head = "<h2 id='failures'>Failures by reason</h2>"
    rows = data.failures.most_common()
    if not rows:
        return [head, "<p class='note'>No failures.</p>"]
    return [
        head,
        _figure("failures", figures.bars(rows, "resources")),
        _table(("reason", "resources"), rows, "failures"),
    ]


def _hosts(data: ReportData) -> list[str]:
    head = "<h2 id='hosts'>Per-host request rates and latencies</h2>"
    if not data.crawled:
        return [head, "<p class='note'>Not a crawl: no fetch times were recorded.</p>"]
    rows = [(h, n, f"{rate:.2f}", ms) for h, n, rate, ms in figures.host_table(data)]
    return [
        head,
        _figure("hosts", figures.hosts(data)),
        _table(("host", "requests", "requests / s", "median fetch ms"), rows, "hosts"),
    ]


def _share(data: ReportData) -> list[str]:
    head = "<h2 id='share'>Share of discovered URLs archived over time</h2>"
    points = figures.archived_share(data) if data.crawled else []
    if not points:
        return [head, "<p class='note'>Not a crawl: a provider lists every URL up front.</p>"]
    last = f"{100 * points[-1][1]:.1f} %"
    return [head, _figure("share", figures.share(points)), f"<p id='share-final'>{last}</p>"]


def _runs(data: ReportData) -> list[str]:
    keys = ("listed", "fetched", "unchanged", "deleted", "failed", "gone", "bytes")
    rows = [
        (r.start, _end(r), r.mode, *(_count(k, r.counts.get(k, "")) for k in keys))
        for r in data.runs
    ]
    return ["<h2 id='runs'>Runs</h2>", _table(("start", "end", "mode", *keys), rows, "runs")]


def _end(run: Run) -> str:
    if run.interrupted:
        return f"{run.end} (interrupted)"
    return run.end or "unfinished"


def _count(key: str, value: Any) -> Any:
    return Bytes(value) if key == "bytes" and isinstance(value, int) else value


def _figure(name: str, svg: str) -> str:
    return f"<figure id='fig-{name}'>{svg}</figure>"


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]], name: str) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table id='table-{name}'><tr>{cells}</tr>{body}</table>"


class Bytes(int):
    """A byte count: shown in binary units, the exact count in its cell's title (JSON: an
    int)."""


def _cell(value: Any) -> str:
    if isinstance(value, Bytes):
        return f"<td class='n' title='{int(value)}'>{figures.human_bytes(value)}</td>"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"<td class='n'>{value}</td>"
    return f"<td>{escape(str(value))}</td>"
