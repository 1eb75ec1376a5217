"""Every harvester default in one place, layered: defaults < TOML file < environment < flags.

Environment variables are ``HARVESTER_<FIELD>`` (upper case), e.g. ``HARVESTER_CONCURRENCY=8``;
a TOML file (``--config``) holds the same field names at top level.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvester import __version__

ENV_PREFIX = "HARVESTER_"
USER_AGENT = f"coop-archive-harvester/{__version__} (+https://github.com/coop-archive; archiving)"


@dataclass(frozen=True)
class HarvestSettings:
    site_url: str
    out: Path
    oai: str | None = None  # the endpoint; found by probing SITE_URL/oai, /modoai when None
    mode: str = "auto"  # auto | oai | crawl
    sets: tuple[str, ...] = ()
    oai_strategy: str = "get"  # get | didl
    concurrency: int = 16
    per_host: int = 8
    delay: float = 0.0  # seconds between requests to one host
    max_time: float | None = None
    max_size: int = 100 * 1024 * 1024  # a resource is truncated past it, an OAI-PMH page refused
    oai_deadline: float = 300.0  # seconds one OAI-PMH request may take, its retries included
    warc_max_size: int = 1_000_000_000
    durable: bool = False  # fsync every WARC group (power-loss safety, ~4 ms a resource)
    user_agent: str = USER_AGENT
    ignore_robots: bool = False
    collection: str = ""  # isPartOf in warcinfo; empty: the out folder's name
    # -- the crawl (no provider, or --mode crawl) --
    seeds: tuple[str, ...] = ()  # more start URLs besides SITE_URL
    include: tuple[str, ...] = ()  # URL regexes: when given, only matching URLs are crawled
    exclude: tuple[str, ...] = ()  # URL regexes never crawled
    max_depth: int = 20
    max_pages: int | None = None
    max_bytes: int | None = None
    delay_factor: float = 1.0  # a host rests at least this times its last response time
    schedule: str = "capability"  # bfs | performance | quality | capability
    score: str = "backlinks"  # the URL score the frontier orders by: backlinks | quality | opic
    crawl_per_host: int = 2  # a crawl's connections per host (the OAI path uses per_host)
    policy: Path | None = None  # a TOML file of crawl policies (favor, default, distrust)
    respect_nofollow: bool = False
    seen_cache: int = 50_000  # entries of the seen-URL test's in-memory CLOCK cache
    quiet: bool = False
    json: bool = False

    @property
    def warc_dir(self) -> Path:
        return self.out / "warcs"

    @property
    def state_path(self) -> Path:
        return self.out / "state.sqlite"

    @property
    def cdx_path(self) -> Path:
        return self.out / "indexes" / "index.cdxj"

    @property
    def log_path(self) -> Path:
        return self.out / "harvest.log"

    @property
    def seen_path(self) -> Path:
        return self.out / "seen.fp"

    @property
    def collection_name(self) -> str:
        return self.collection or self.out.resolve().name


def _coerce(name: str, raw: Any) -> Any:
    kind = {f.name: str(f.type) for f in dataclasses.fields(HarvestSettings)}[name]
    if not isinstance(raw, str):
        return tuple(raw) if isinstance(raw, list) else raw
    if kind == "bool":
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if kind in ("int", "int | None"):
        return int(raw)
    if "float" in kind:
        return float(raw)
    if "tuple" in kind:
        return tuple(p for p in raw.split(",") if p)
    if "Path" in kind:
        return Path(raw)
    return raw


def load_settings(
    *,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    **flags: Any,
) -> HarvestSettings:
    """Build settings from the layers; flags that are None (or empty tuples) do not override."""
    names = {f.name for f in dataclasses.fields(HarvestSettings)}
    values: dict[str, Any] = {}
    if config_file:
        with open(config_file, "rb") as fh:
            values |= {k: _coerce(k, v) for k, v in tomllib.load(fh).items() if k in names}
    env = os.environ if environ is None else environ
    for name in names:
        if (raw := env.get(ENV_PREFIX + name.upper())) is not None:
            values[name] = _coerce(name, raw)
    values |= {k: v for k, v in flags.items() if v is not None and v != ()}
    for required in ("site_url", "out"):
        if required not in values:
            raise ValueError(f"missing required setting {required!r}")
    values["out"] = Path(values["out"])
    _check(values)
    return HarvestSettings(**values)


def _check(values: Mapping[str, Any]) -> None:
    choices = {
        "mode": ("auto", "oai", "crawl"),
        "oai_strategy": ("get", "didl"),
        "schedule": ("bfs", "performance", "quality", "capability"),
    }
    for name, allowed in choices.items():
        if name in values and values[name] not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {values[name]!r}")
    for name in ("concurrency", "per_host"):
        if name in values and int(values[name]) < 1:
            raise ValueError(f"{name} must be at least 1")
