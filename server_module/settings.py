"""Every provider default in one place, layered: defaults < TOML file < environment < flags.

Environment variables are ``OAI_PROVIDER_<FIELD>`` (upper case), e.g.
``OAI_PROVIDER_PAGE_SIZE=500``; a TOML file holds the same field names at top level. A list
is a TOML array, or in the environment a string split at ``,`` (``exclude``) or, for folders,
at ``os.pathsep`` as ``PATH`` is (``OAI_PROVIDER_ALLOW_OUTSIDE=/usr/share/javascript:/srv/x``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from coop_common.settings import SettingsError, load
from server_module.formats import INLINE_MAX
from server_module.index.publicpaths import DEFAULT_EXCLUDES
from server_module.plugins.builtins import BUILTIN_NAMES
from server_module.plugins.spec import PluginSpec

log = logging.getLogger(__name__)

ENV_PREFIX = "OAI_PROVIDER_"
# Identify's adminEmail as OAI-PMH.xsd types it
EMAIL = re.compile(r"\S+@(\S+\.)+\S+")


@dataclass(frozen=True)
class ProviderSettings:
    docroot: Path
    base_url: str = ""  # required; only `serve` has a default: http://HOST:PORT, and says so
    rebase: bool = False  # a base URL other than the index's renames every item: say so here
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
    host: str = "127.0.0.1"  # where `serve` listens
    port: int = 8080
    workers: int = 2  # gunicorn worker processes under `serve`
    threads: int = 4  # threads per worker
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
    def site_host(self) -> str:
        """The base URL's host (``host`` is where ``serve`` listens)."""
        return urlsplit(self.base_url).hostname or "localhost"

    @property
    def name(self) -> str:
        return self.repository_name or self.site_host

    @property
    def email(self) -> str:
        return self.admin_email or f"webmaster@{self.site_host}"

    @property
    def endpoint_url(self) -> str:
        return self.base_url.rstrip("/") + self.endpoint


def load_settings(
    *,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    serving: bool = False,
    **flags: Any,
) -> ProviderSettings:
    """Build settings from the layers; flags that are None do not override. A base URL is
    required unless ``serving``, where none from any layer means ``http://HOST:PORT``."""
    settings = load(
        ProviderSettings,
        ENV_PREFIX,
        config_file=config_file,
        environ=environ,
        flags=flags,
        fixed=_normalise,
    )
    if settings.base_url:
        return settings
    if not serving:
        raise SettingsError(
            f"missing required setting base_url: pass --base-url, or set it {WHERE}"
        )
    base_url = f"http://{settings.host}:{settings.port}"
    log.warning("no base URL given (--base-url, or base_url %s): serving as %s", WHERE, base_url)
    return replace(settings, base_url=base_url)


WHERE = f"in the settings file or {ENV_PREFIX}BASE_URL"


def _normalise(values: dict[str, Any]) -> None:
    """Check what has a form (URL, port, counts, address) and normalise the endpoint."""
    if not values.get("endpoint", "/oai").startswith("/"):
        values["endpoint"] = "/" + values["endpoint"]
    values["base_url"] = check_base_url(str(values.get("base_url", "")))
    port = values.get("port", 8080)
    if not 0 < port < 65536:
        raise SettingsError(f"--port {port}: a TCP port is 1 to 65535")
    for name in ("workers", "threads"):
        if values.get(name, 1) < 1:
            raise SettingsError(f"--{name} {values[name]}: at least 1")
    values["plugin"] = tuple(
        p if isinstance(p, PluginSpec) else PluginSpec.from_table(p)
        for p in values.get("plugin", ())
    )
    email = values.get("admin_email", "")
    if email and not EMAIL.fullmatch(email):
        raise SettingsError(f"--admin-email {email}: not an e-mail address (name@host.domain)")


def check_base_url(base_url: str) -> str:
    """The base URL without its trailing slash; refused unless an absolute http(s) URL.

    >>> check_base_url("https://www.example.org/")
    'https://www.example.org'
    >>> check_base_url("www.example.org")
    Traceback (most recent call last):
    ...
    coop_common.settings.SettingsError: --base-url www.example.org: not an absolute http(s) \
URL (say https://www.example.org)
    """
    if not base_url:
        return ""
    parts = urlsplit(base_url)
    if parts.scheme in ("http", "https") and parts.hostname and not parts.query:
        return base_url.rstrip("/")
    guess = base_url if "://" in base_url else "https://" + base_url.lstrip("/")
    raise SettingsError(f"--base-url {base_url}: not an absolute http(s) URL (say {guess})")
