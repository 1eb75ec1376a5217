"""The table, figures and notes of ``python -m bench seen``; ``bench/seen.py`` measures."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.seen import Curve, Scale

__all__ = ["COLUMNS", "curve_rows", "figures", "notes", "scale_rows"]

COLUMNS = ["metric", "ours", "peer", "ratio", "target", "met?"]
TARGET_TESTS = 200_000


def _row(metric: str, ours: object, peer: float | None = None, target: str = "",
         met: bool | None = None) -> list[object]:  # fmt: skip
    ratio = "" if peer is None or not isinstance(ours, float | int) else ours / peer
    verdict = "" if met is None else "yes" if met else "no"
    return [metric, ours, "" if peer is None else peer, ratio, target, verdict]


def scale_rows(s: Scale) -> list[list[object]]:
    n, rate = f"{s.urls:,}", s.tests / s.contains.wall
    met = rate >= TARGET_TESTS
    ours, sparse = s.strides["ours"], s.strides["4096"]
    mine, peer = s.vs_peer["ours"], s.vs_peer["peer"]
    half = s.tests // 2
    return [
        _row(f"insert {n} URLs with add_if_new, flushes apart (URLs/s)", s.urls / s.insert.wall),
        _row(f"flush: {len(s.flush_s)} merges of 1M into the store, mean / last (s)",
             f"{sum(s.flush_s) / len(s.flush_s):.2f} / {s.flush_s[-1]:.2f}"),
        _row(f"membership, {s.tests:,} mixed tests, {n} stored (tests/s)", rate, None,
             f">= {TARGET_TESTS:,}", met),
        _row("  the same, per CPU second (tests/s)", s.tests / s.contains.cpu),
        _row("membership, index of every 64th key vs every 4096th (tests/s)",
             half / ours.wall, half / sparse.wall),
        _row("membership vs an in-memory set of fingerprints (tests/s)",
             half / mine.wall, half / peer.wall),
        _row("add_many_if_new, mixed, batches of 1,000 (URLs/s)", half / s.many.wall),
        _row("fingerprint alone (URLs/s)", s.tests / s.fingerprint.wall),
        _row("cache hit rate in the mixed tests", f"{s.hit_rate:.1%}"),
        _row("mixed tests the store's filter answered without a search", f"{s.filtered:.1%}"),
        _row("heap held after the tests vs the in-memory set (MiB, RssAnon)",
             s.ours_anon_mb, s.peer_anon_mb),
        _row(f"store's pages resident after the tests (MiB, RssFile; filter {s.filter_mb:.1f})",
             s.ours_file_mb),
        _row("peak RSS, before the in-memory set was built (MiB)", s.peak_rss_mb),
        _row(f"store on disk (MiB; {s.store_mb * 2**20 / s.urls:.1f} bytes/URL)", s.store_mb),
    ]  # fmt: skip


def curve_rows(c: Curve) -> list[list[object]]:
    rows = [
        _row(f"crawl trace: links met / distinct / pages fetched, {c.active_hosts:,} hosts "
             "at once", f"{c.links:,} / {c.distinct:,} / {c.pages:,}"),
    ]  # fmt: skip
    rows += [_row(f"CLOCK hit rate, 2^{size.bit_length() - 1} = {size:,} entries",
                  f"{rate:.1%}") for size, rate in sorted(c.rates.items())]  # fmt: skip
    r = c.replay
    rows += [
        _row("infinite cache: the share of repeats (upper bound)", f"{c.infinite:.1%}"),
        _row("SeenSet on the trace, defaults: add_if_new (tests/s)", r["tests_per_s"]),
        _row("SeenSet on the trace: cache / buffer / disk shares (disk answered by the filter)",
             f"{r['cache']:.1%} / {r['buffer']:.1%} / {r['disk']:.1%} ({r['filter']:.1%})"),
    ]  # fmt: skip
    return rows


def figures(s: Scale, c: Curve) -> dict[str, float | int | str]:
    size, rise = c.steepest()
    return {
        "urls": s.urls,
        "tests_per_s": round(s.tests / s.contains.wall),
        "tests_per_cpu_s": round(s.tests / s.contains.cpu),
        "ratio_vs_set": round(s.vs_peer["peer"].wall / s.vs_peer["ours"].wall, 3),
        "ratio_vs_stride_4096": round(s.strides["4096"].wall / s.strides["ours"].wall, 3),
        "insert_per_s": round(s.urls / s.insert.wall),
        "peak_rss_mb": round(s.peak_rss_mb, 1),
        "heap_mb": round(s.ours_anon_mb, 1),
        "filtered": round(s.filtered, 4),
        "store_mb": round(s.store_mb, 1),
        "hit_rate_2_16": round(c.rates.get(2**16, 0.0), 4),
        "hit_rate_infinite": round(c.infinite, 4),
        "critical_from": size,
        "critical_rise": round(rise, 4),
    }


def notes(s: Scale, c: Curve) -> list[str]:
    size, rise = c.steepest()
    per_page = c.links / c.pages
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return [
        f"Load average at the end: {load} on {os.cpu_count()} cores (shared machine); the "
        "per-CPU-second rate is less sensitive to it than the wall-clock one.",
        "ratio = ours / peer, both timed on the same batches of 100,000, alternating which goes "
        "first. Peers: the same store searched with the issue's sparse index of every 4096th "
        "key; a Python set of the same 64-bit fingerprints in memory (fingerprinting included "
        "on both sides). Mixed tests: half the URLs drawn uniformly from those stored, half "
        "new; the buffer is empty (just flushed), so every cache miss probes the store: the "
        "worst case for the store. Rates are wall-clock unless said otherwise.",
        f"Heap held: RssAnon growth (ours: buffer, cache, sparse index; peer: the set). The "
        f"store's pages (keys and filter) are file-backed and count in RSS only as mapped "
        f"({s.store_mb:.0f} MiB at most), in RssFile.",
        f"Critical point: the hit rate rises most between 2^{size.bit_length() - 1} and "
        f"2^{size.bit_length()} entries (+{rise:.1%}), where the cache starts to hold a full "
        f"round of the round-robin: {c.active_hosts:,} hosts x {per_page:.1f} links per page "
        f"= {c.active_hosts * per_page:,.0f} entries.",
    ]
