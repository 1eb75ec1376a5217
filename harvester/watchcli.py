"""The ``watch`` command's wiring: sources and settings from flags, then the watch."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harvester.recrawl.policy import AUTO, Bounds
from harvester.settings import HarvestSettings, _check_url
from harvester.stateurl import check_state_url
from harvester.watch import Watch
from harvester.watchsources import from_urls, load_sources


def run_watch(
    urls: list[str], out: Path, sources_file: Path | None, **flags: Any
) -> dict[str, Any]:
    """Watch until stopped or ``max_time``; the summary. ValueError for a usage error."""
    if flags["rate"] <= 0:
        raise ValueError("--rate must be positive")
    low = flags["min_interval"]
    bounds = Bounds(AUTO if low is None else low, flags["max_interval"])
    if (low is not None and low <= 0) or bounds.max_interval < bounds.min_interval:
        raise ValueError("--min-interval must be positive and at most --max-interval")
    for url in urls:
        _check_url("url", url)
    sources = from_urls(urls, out, flags["mode"], bounds)
    if sources_file is not None:
        sources += load_sources(sources_file, out, bounds)
    if not sources:
        raise ValueError("give URLs to watch, or --sources FILE.toml")
    out.mkdir(parents=True, exist_ok=True)
    if flags["state"] is not None:
        check_state_url(flags["state"])
    base = HarvestSettings(
        site_url=sources[0].url,
        out=out,
        state=flags["state"],
        delay=flags["delay"],
        ignore_robots=flags["ignore_robots"],
        quiet=True,
    )
    watch = Watch(
        sources,
        rate=flags["rate"],
        revisit=flags["revisit"],
        max_time=flags["max_time"],
        delay=flags["delay"],
        base=base,
    )
    return asyncio.run(watch.run()).as_dict()
