"""Every provider default in one place, layered: defaults < TOML file < environment < flags.

Environment variables are ``OAI_PROVIDER_<FIELD>`` (upper case), e.g.
``OAI_PROVIDER_PAGE_SIZE=500``; a TOML file holds the same field names at top level.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from server_module.scan import DEFAULT_EXCLUDES

ENV_PREFIX = "OAI_PROVIDER_"


@dataclass(frozen=True)
class ProviderSettings:
    docroot: Path
    base_url: str
    endpoint: str = "/oai"
    index_path: Path | None = None
    repository_name: str = ""  # empty: the base URL's host
    admin_email: str = ""  # empty: webmaster@<host>
    page_size: int = 1000  # headers per ListIdentifiers page
    records_page_size: int = 250  # records per ListRecords page
    page_bytes: int = 8 * 1024 * 1024  # ListRecords pages are cut by size too (oai_didl)
    inline_max: int = 1024 * 1024  # files up to this size go into oai_didl by value
    refresh_interval: float = 300.0  # seconds between index refreshes; 0: no refresh at all
    watch: bool = True  # also refresh within seconds of a change under docroot (inotify)
    token_ttl: int = 7 * 24 * 3600  # resumption tokens expire after a week
    read_ahead: bool = True  # make the next list page while the harvester parses this one
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    serve_files: bool = True  # False when nginx/Apache serves the files and proxies the endpoint
    max_request_bytes: int = 8192  # larger query strings or bodies are refused with badArgument
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or "localhost"

    @property
    def name(self) -> str:
        return self.repository_name or self.host

    @property
    def email(self) -> str:
        return self.admin_email or f"webmaster@{self.host}"

    @property
    def endpoint_url(self) -> str:
        return self.base_url.rstrip("/") + self.endpoint


def _coerce(name: str, raw: Any) -> Any:
    """Turn a TOML or environment value into the type the field's default has."""
    kind = {f.name: f.type for f in dataclasses.fields(ProviderSettings)}[name]
    if not isinstance(raw, str):
        return tuple(raw) if isinstance(raw, list) else raw
    if "bool" in kind:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if "int" in kind:
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
) -> ProviderSettings:
    """Build settings from the layers; flags that are None do not override."""
    names = {f.name for f in dataclasses.fields(ProviderSettings)} - {"extra"}
    values: dict[str, Any] = {}
    if config_file:
        with open(config_file, "rb") as fh:
            values |= {k: _coerce(k, v) for k, v in tomllib.load(fh).items() if k in names}
    env = os.environ if environ is None else environ
    for name in names:
        if (raw := env.get(ENV_PREFIX + name.upper())) is not None:
            values[name] = _coerce(name, raw)
    values |= {k: v for k, v in flags.items() if v is not None}
    missing = {"docroot", "base_url"} - values.keys()
    if missing:
        raise ValueError(f"missing required setting(s): {', '.join(sorted(missing))}")
    values["docroot"] = Path(values["docroot"])
    if values.get("index_path") is not None:
        values["index_path"] = Path(values["index_path"])
    if not values.get("endpoint", "/oai").startswith("/"):
        values["endpoint"] = "/" + values["endpoint"]
    values["base_url"] = str(values["base_url"]).rstrip("/")
    return ProviderSettings(**values)
