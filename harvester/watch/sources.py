"""What a watch watches: sources from the command line or a TOML file (``--sources``).

A sources file holds one ``[[source]]`` table per source::

    [[source]]
    url = "https://www.example.org/"     # required
    mode = "crawl"                       # auto | oai | crawl (default auto)
    out = "example"                      # its collection, under --out (default: from the URL)
    weight = 2.0                         # its pages count twice in the revisit order
    min_interval = 60                    # seconds between two fetches of one URL, at least
    max_interval = 604800                # and at most (defaults: --min-interval, --max-interval)

The kinds of source plug into :mod:`harvester.watch.keeper` through :class:`SourceKind`: ``crawl``
(revisits of every URL found, through :mod:`harvester.recrawl.policy`) and ``oai`` (a poll,
the incremental harvest's ListIdentifiers with ``from``, at an adaptive interval). A
ResourceSync source (a Change List read from its last ``md:until``) and a records-mode source
(ListIdentifiers of its records) are polls too: each is a new kind whose poll returns how
many changes it archived.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harvester.recrawl.policy import Bounds

MODES = ("auto", "oai", "crawl")
KEYS = {"url", "mode", "out", "weight", "min_interval", "max_interval"}
DEFAULT_BOUNDS = Bounds()  # the default floor (1 s or the round-robin cycle) .. 7 days


@dataclass(frozen=True)
class Source:
    url: str
    out: Path
    mode: str = "auto"
    weight: float = 1.0
    bounds: Bounds = DEFAULT_BOUNDS


def folder_name(url: str) -> str:
    """A collection folder for ``url``: its host and port, then its path, made safe.

    >>> folder_name("http://127.0.0.1:8080/a/b?x")
    '127.0.0.1-8080-a-b'
    """
    parts = urlsplit(url)
    name = f"{parts.netloc}{parts.path}".strip("/")
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in name).strip("-") or "site"


def from_urls(urls: list[str], out: Path, mode: str, bounds: Bounds) -> list[Source]:
    return [Source(url, out / folder_name(url), mode, 1.0, bounds) for url in urls]


def load_sources(path: Path, out: Path, bounds: Bounds) -> list[Source]:
    """The sources of a TOML file; ValueError names the file and the fault."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read the sources file {path}: {exc}") from None
    tables = data.get("source")
    if not isinstance(tables, list) or not tables:
        raise ValueError(f"{path}: no [[source]] tables")
    return [_source(path, i, table, out, bounds) for i, table in enumerate(tables, 1)]


def _source(path: Path, index: int, table: Any, out: Path, bounds: Bounds) -> Source:
    where = f"{path}: source {index}"
    if not isinstance(table, dict):
        raise ValueError(f"{where} is not a table")
    unknown = set(table) - KEYS
    if unknown:
        raise ValueError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    url = table.get("url")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"{where}: url must be an http:// or https:// URL")
    mode = table.get("mode", "auto")
    if mode not in MODES:
        raise ValueError(f"{where}: mode must be one of {', '.join(MODES)}")
    try:
        weight = float(table.get("weight", 1.0))
        low = float(table.get("min_interval", bounds.min_interval))
        high = float(table.get("max_interval", bounds.max_interval))
    except (TypeError, ValueError):
        raise ValueError(f"{where}: weight and intervals must be numbers") from None
    if weight <= 0 or low < 0 or (low == 0 and "min_interval" in table) or high < low:
        raise ValueError(f"{where}: weight and intervals must be positive, min <= max")
    folder = table.get("out", folder_name(url))
    return Source(url, out / str(folder), mode, weight, Bounds(low, high))
