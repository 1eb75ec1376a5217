"""Every provider default in one place, layered: defaults < TOML file < environment < flags.

Environment variables are ``OAI_PROVIDER_<FIELD>`` (upper case), e.g.
``OAI_PROVIDER_PAGE_SIZE=500``; a TOML file holds the same field names at top level. A list
is a TOML array, or in the environment a string split at ``,`` (``exclude``) or, for folders,
at ``os.pathsep`` as ``PATH`` is (``OAI_PROVIDER_ALLOW_OUTSIDE=/usr/share/javascript:/srv/x``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from coop_common.settings import load
from server_module.formats import INLINE_MAX
from server_module.plugins.builtins import BUILTIN_NAMES
from server_module.plugins.spec import PluginSpec
from server_module.publicpaths import DEFAULT_EXCLUDES

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
    inline_max: int = INLINE_MAX  # files up to this size go into oai_didl by value
    refresh_interval: float = 300.0  # seconds between index refreshes; 0: no refresh at all
    watch: bool = True  # also refresh within seconds of a change under docroot (inotify)
    token_ttl: int = 7 * 24 * 3600  # resumption tokens expire after a week
    read_ahead: bool = True  # make the next list page while the harvester parses this one
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    allow_outside: tuple[Path, ...] = ()  # folders outside the root that symlinks may publish
    serve_files: bool = True  # False when nginx/Apache serves the files and proxies the endpoint
    resourcesync: bool = True  # also publish the ResourceSync documents (/.well-known/resourcesync)
    max_request_bytes: int = 8192  # larger query strings or bodies are refused with badArgument
    access_log: str | None = None  # gunicorn's access log under `serve`: a file, or "-" for stdout
    # Plugins (server_module/plugins/): tools run on each new or changed file, whose output
    # oai_didl carries. `plugins = false` turns them all off; `builtin_plugins` picks the
    # built-ins (each runs where its tool is installed); `[[plugin]]` tables add commands.
    plugins: bool = True
    builtin_plugins: tuple[str, ...] = BUILTIN_NAMES
    plugin: tuple[PluginSpec, ...] = ()  # the settings file's [[plugin]] tables
    plugin_workers: int = 0  # tools run at once; 0: half the cores, at least one
    plugin_timeout: float = 30.0  # seconds a run may take (wall clock, and CPU)
    plugin_memory: int = 1 << 30  # bytes of address space a tool may map
    plugin_output_max: int = 1 << 20  # bytes of output a tool may write; cut beyond

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


def load_settings(
    *,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    **flags: Any,
) -> ProviderSettings:
    """Build settings from the layers; flags that are None do not override."""
    return load(
        ProviderSettings,
        ENV_PREFIX,
        config_file=config_file,
        environ=environ,
        flags=flags,
        fixed=_normalise,
    )


def _normalise(values: dict[str, Any]) -> None:
    if not values.get("endpoint", "/oai").startswith("/"):
        values["endpoint"] = "/" + values["endpoint"]
    values["base_url"] = str(values["base_url"]).rstrip("/")
    values["plugin"] = tuple(
        p if isinstance(p, PluginSpec) else PluginSpec.from_table(p)
        for p in values.get("plugin", ())
    )
