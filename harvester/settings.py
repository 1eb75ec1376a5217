"""Every harvester default in one place, layered: defaults < TOML file < environment < flags.

Environment variables are ``HARVESTER_<FIELD>`` (upper case), e.g. ``HARVESTER_CONCURRENCY=8``;
a TOML file (``--config``) holds the same field names at top level. The fetcher's and the
OAI-PMH client's limits are fields here too; :func:`harvester.http.fetch.fetch_settings` and
:func:`harvester.oai.httpclient.oai_limits` build their settings from these.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from coop_common import __version__
from coop_common.settings import load
from harvester.exceptions import StateURLError
from harvester.stateurl import check_state_url

ENV_PREFIX = "HARVESTER_"
USER_AGENT = f"coop-archive-harvester/{__version__} (+https://github.com/coop-archive; archiving)"


@dataclass(frozen=True)
class HarvestSettings:
    site_url: str
    out: Path
    oai: str | None = None  # the endpoint; found by probing SITE_URL/oai, /modoai when None
    mode: str = "auto"  # auto | oai | records | resourcesync | crawl
    sets: tuple[str, ...] = ()
    oai_strategy: str = "get"  # get | didl
    # A list that ends later than its bound is read again from it, at most this many times,
    # until nothing new appears (records changed while it was read: harvester/listed/catchup.py)
    catch_up_passes: int = 3
    # Format identification of each payload in its DIDL record
    # (harvester/archive/formatid/identifier.py):
    # auto (magic for the crawl, ResourceSync and records mode, which have no provider's DIDL)
    # | off | magic (libmagic) | pronom (also fido's PRONOM PUID, 5-80 ms a resource).
    identify: str = "auto"
    concurrency: int = 16
    per_host: int = 8
    fetch_processes: int = 0  # processes fetching a listed site; 0: a core each from 2,000 on
    delay: float = 0.0  # seconds between requests to one host
    max_time: float | None = None
    max_size: int = 100 * 1024 * 1024  # a resource is truncated past it
    warc_max_size: int = 1_000_000_000
    durable: bool = False  # fsync every WARC group (power-loss safety, ~4 ms a resource)
    user_agent: str = USER_AGENT
    ignore_robots: bool = False
    collection: str = ""  # isPartOf in warcinfo; empty: the out folder's name
    max_attempts: int = 5  # failed fetches of one listed version before it is abandoned
    retry_delay: float = (
        900.0  # seconds before the 2nd attempt (Heritrix's retry delay), doubled after
    )
    state: str | None = None  # the state's URL; None: sqlite:///OUT/state.sqlite
    # -- records mode (identifiers that are not URLs, or --mode records) --
    metadata_prefixes: tuple[str, ...] = ()  # ListRecords in each; () is oai_dc; "all"
    from_date: str | None = None  # overrides each list's from (an OAI-PMH datestamp)
    until_date: str | None = None  # until; a run with it moves no list's bound
    linked: str = "files"  # none | landing | files: which linked resources to fetch
    linked_scope: tuple[str, ...] = ()  # more domains for linked resources; "*" any
    # -- a job many workers share (a postgresql:// state) --
    worker: str = ""  # this worker's id; empty: HOSTNAME-PID with a shared state, none else
    workers: int = 1  # worker processes to start on this machine (postgresql:// only)
    lease: float = 30.0  # seconds a dead worker's hosts stay leased to it
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
    crawl_per_host: int = 0  # a crawl's pages of a host at once; 0: 2, or --browser-tabs given
    crawl_processes: int = 0  # 1: a crawl archives in its process, 2: in a second; 0: 2 if 2+ cores
    policy: Path | None = None  # a TOML file of crawl policies (favor, default, distrust)
    respect_nofollow: bool = False
    seen_cache: int = 50_000  # entries of the seen-URL test's in-memory CLOCK cache
    commit_every: int = 256  # resources whose marks share one state commit (and one WARC file)
    commit_seconds: float = 1.0  # a crawl commits its batch of pages at least this often
    # -- browser capture (--browser: each crawled page loaded in headless Chromium) --
    browser: bool = False
    browser_executable: str = "chromium"  # Debian's, which make sysdeps installs
    browser_tabs: int = 0  # pages loaded at once; 0: one a core, 2 to 8
    browser_page_time: float = 30.0  # seconds a page may load, scroll and be read
    browser_max_requests: int = 1000  # answers recorded per page; later requests are refused
    browser_max_rss: int = 1024 * 1024 * 1024  # bytes the browser may hold before a restart
    # -- the resource fetcher (harvester.http.fetch); times in seconds, sizes in bytes --
    connect_timeout: float = 10.0
    read_timeout: float = 30.0  # the longest a body may stall
    fetch_deadline: float = 120.0  # for one response, from the request to the body's end
    min_rate: float = 1024.0  # bytes a second a body must average, after rate_grace
    rate_grace: float = 5.0
    max_header_size: int = 64 * 1024  # per field and in total
    max_header_count: int = 200
    max_redirects: int = 10
    max_retries: int = 3  # of 429, 5xx, timeouts and connection failures
    backoff_base: float = 0.5
    backoff_max: float = 60.0  # a longer Retry-After ends the retries
    robots_max_size: int = 500 * 1024
    robots_ttl: float = 24 * 3600.0
    robots_error_ttl: float = 300.0  # an unreadable robots.txt disallows all this long
    # -- the OAI-PMH client (harvester.oai.httpclient) --
    oai_timeout: float = 30.0  # connect and per read
    oai_deadline: float = 300.0  # seconds one OAI-PMH request may take, its retries included
    oai_max_bytes: int = 64 * 1024 * 1024  # a response's body, also after decompression
    oai_max_retries: int = 5
    oai_max_wait: float = 120.0  # the longest pause before a retry
    oai_backoff: float = 1.0
    quiet: bool = False
    json: bool = False

    @property
    def warc_dir(self) -> Path:
        return self.out / "warcs"

    @property
    def state_url(self) -> str:
        return self.state or f"sqlite:///{self.out / 'state.sqlite'}"

    @property
    def shared(self) -> bool:
        """Whether the state is a job's that many workers may share."""
        return self.state_url.startswith("postgresql:")

    @property
    def worker_id(self) -> str:
        """This worker's id, in its WARC, CDXJ, lock, log and seen-file names; empty for the
        one harvester of an SQLite state."""
        if self.worker or not self.shared:
            return self.worker
        return f"{socket.gethostname().split('.')[0]}-{os.getpid()}"

    def _own(self, name: str, suffix: str) -> str:
        return f"{name}-{self.worker_id}{suffix}" if self.worker_id else f"{name}{suffix}"

    @property
    def cdx_path(self) -> Path:
        return self.out / "indexes" / self._own("index", ".cdxj")

    @property
    def log_path(self) -> Path:
        return self.out / self._own("harvest", ".log")

    @property
    def seen_path(self) -> Path:
        return self.out / self._own("seen", ".fp")

    @property
    def lock_name(self) -> str:
        return self._own("harvest", ".lock")

    @property
    def collection_name(self) -> str:
        return self.collection or self.out.resolve().name


def defaults() -> HarvestSettings:
    """The defaults alone, for a component built outside a harvest (tests, benchmarks)."""
    return HarvestSettings(site_url="", out=Path())


def load_settings(
    *,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    **flags: Any,
) -> HarvestSettings:
    """Build settings from the layers; flags that are None (or empty tuples) do not override."""
    return load(
        HarvestSettings,
        ENV_PREFIX,
        config_file=config_file,
        environ=environ,
        flags=flags,
        fixed=_check,
    )


def _check(values: Mapping[str, Any]) -> None:
    """Choices and lower bounds; ``load`` reports the error as a usage error."""
    choices = {
        "mode": ("auto", "oai", "records", "resourcesync", "crawl"),
        "linked": ("none", "landing", "files"),
        "oai_strategy": ("get", "didl"),
        "identify": ("auto", "off", "magic", "pronom"),
        "schedule": ("bfs", "performance", "quality", "capability"),
        "score": ("backlinks", "quality", "opic"),
    }
    for name, allowed in choices.items():
        if name in values and values[name] not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {values[name]!r}")
    for name in ("concurrency", "per_host", "commit_every"):
        if name in values and int(values[name]) < 1:
            raise ValueError(f"{name} must be at least 1")
    for name in ("from_date", "until_date"):
        if values.get(name) is not None:
            _check_datestamp(name, values[name])
    urls = [("site_url", values["site_url"]), ("oai", values.get("oai"))]
    urls += [("seed", seed) for seed in values.get("seeds", ())]
    for name, url in urls:
        if url is not None:
            _check_url(name, url)
    _check_workers(values)
    if int(values.get("catch_up_passes", 0)) < 0:
        raise ValueError("catch_up_passes must be 0 (none) or more")
    if int(values.get("fetch_processes", 0)) < 0:
        raise ValueError("fetch_processes must be 0 (one a core) or more")
    if int(values.get("crawl_per_host", 0)) < 0:
        raise ValueError("crawl_per_host must be 0 (2, or the tabs given) or more")
    if int(values.get("browser_tabs", 0)) < 0:
        raise ValueError("browser_tabs must be 0 (one a core) or more")
    if int(values.get("crawl_processes", 0)) not in (0, 1, 2):
        raise ValueError("crawl_processes must be 0 (2 on two cores or more), 1 or 2")
    if values.get("state") is not None:
        try:
            check_state_url(values["state"])
        except StateURLError as exc:
            raise ValueError(str(exc)) from None


def _check_workers(values: Mapping[str, Any]) -> None:
    """A worker id safe in a file name; ``--workers`` above 1 only on a shared state."""
    if not re.fullmatch(r"[A-Za-z0-9._-]{0,64}", str(values.get("worker", ""))):
        raise ValueError("worker must be at most 64 letters, digits, '.', '_' or '-'")
    if float(values.get("lease", 30.0)) <= 0:
        raise ValueError("lease must be more than 0 seconds")
    workers = int(values.get("workers", 1))
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if workers > 1 and not str(values.get("state") or "").startswith("postgresql:"):
        raise ValueError(
            "--workers above 1 needs a postgresql:// state (--state): an SQLite state holds"
            " one harvester per collection"
        )


def _check_url(name: str, url: str) -> None:
    """ValueError unless ``url`` is an absolute http(s) URL with a host and a valid port.

    >>> _check_url("site_url", "ftp://example.org/")
    Traceback (most recent call last):
    ValueError: site_url must be an http:// or https:// URL, not 'ftp://example.org/'
    """
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 -- raises ValueError for a port out of range
    except ValueError:
        raise ValueError(f"{name} has a bad port: {url!r}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{name} must be an http:// or https:// URL, not {url!r}")
    if not parts.hostname:
        raise ValueError(f"{name} must name a host: {url!r}")


def _check_datestamp(name: str, value: str) -> None:
    """ValueError unless ``value`` is an OAI-PMH datestamp (``YYYY-MM-DD[Thh:mm:ssZ]``)."""
    from harvester.exceptions import ProtocolError
    from harvester.oai.dates import parse_oai_datestamp

    try:
        parse_oai_datestamp(value)
    except ProtocolError:
        flag = name.removesuffix("_date")
        raise ValueError(
            f"--{flag} must be YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ, not {value!r}"
        ) from None
