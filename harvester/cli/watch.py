"""The ``watch`` command's wiring: sources and settings from flags, then the watch."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harvester.recrawl.policy import AUTO, Bounds
from harvester.settings import HarvestSettings, _check_url, defaults
from harvester.stateurl import check_state_url
from harvester.watch.keeper import Watch
from harvester.watch.sources import from_urls, load_sources


def run_watch(
    urls: list[str], out: Path, sources_file: Path | None, **flags: Any
) -> dict[str, Any]:
    """Watch until stopped or ``max_time``; the summary. ValueError for a usage error.

    A flag not given (None) takes its setting's default."""
    given = {k: v for k, v in flags.items() if v is not None}
    flags = {**_defaults(), **given}
    if flags["rate"] <= 0:
        raise ValueError("--rate must be positive")
    low = flags.get("min_interval")
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
    state = flags.get("state")
    if state is not None:
        check_state_url(state)
    base = HarvestSettings(
        site_url=sources[0].url,
        out=out,
        state=state,
        delay=flags["delay"],
        ignore_robots=flags["ignore_robots"],
        quiet=True,
    )
    watch = Watch(
        sources,
        rate=flags["rate"],
        revisit=flags["revisit"],
        max_time=flags.get("max_time"),
        delay=flags["delay"],
        base=base,
    )
    return asyncio.run(watch.run()).as_dict()


def _defaults() -> dict[str, Any]:
    """The defaults of the watch's flags that are settings (:mod:`harvester.cli.flags`)."""
    base = defaults()
    return {
        "delay": base.delay,
        "ignore_robots": base.ignore_robots,
        "quiet": base.quiet,
        "max_interval": Bounds().max_interval,
    }
