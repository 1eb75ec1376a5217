"""The limits of the harvester's two HTTP clients, each picked out of the harvest's settings.

Every default lives in :class:`~harvester.settings.HarvestSettings` (so each can be set in the
TOML file or the environment); :func:`fetch_settings` builds the resource fetcher's
(:mod:`harvester.http.fetch`) and :func:`oai_limits` the OAI-PMH client's
(:mod:`harvester.oai.httpclient`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, TypeVar

from harvester.settings import HarvestSettings

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["FetchSettings", "OAILimits", "fetch_settings", "oai_limits"]

_Limits = TypeVar("_Limits", bound="DataclassInstance")


@dataclass(frozen=True)
class FetchSettings:
    """Every limit of the fetcher; times in seconds, sizes in bytes. Built by
    :func:`fetch_settings` from the fields of :class:`~harvester.settings.HarvestSettings` of
    the same names (or the names ``_FETCH_NAMES`` gives), which say what each means."""

    user_agent: str
    connect_timeout: float
    read_timeout: float
    deadline: float
    min_rate: float
    rate_grace: float
    max_size: int
    max_header_size: int
    max_header_count: int
    max_redirects: int
    retries: int
    backoff_base: float
    backoff_max: float
    per_host: int
    total_connections: int
    obey_robots: bool
    robots_max_size: int
    robots_ttl: float
    robots_error_ttl: float

    @property
    def robots_token(self) -> str:
        """The product token matched against ``User-agent`` lines (RFC 9309 §2.2.1).

        >>> from dataclasses import replace
        >>> from harvester.settings import defaults
        >>> settings = fetch_settings(defaults())
        >>> replace(settings, user_agent="mybot/2.0 (+https://example.org/)").robots_token
        'mybot'
        """
        words = self.user_agent.split("/", 1)[0].split()
        return words[0] if words else "*"


def fetch_settings(settings: HarvestSettings) -> FetchSettings:
    """The fetcher's limits out of a harvest's settings; its connections are the harvest's."""
    return _picked(FetchSettings, settings, _FETCH_NAMES, obey_robots=not settings.ignore_robots)


@dataclass(frozen=True)
class OAILimits:
    """The bounds of every OAI-PMH request; times in seconds, sizes in bytes. Built by
    :func:`oai_limits`."""

    user_agent: str
    timeout: float
    max_retries: int
    max_bytes: int
    max_wait: float
    backoff: float
    deadline: float


def oai_limits(settings: HarvestSettings) -> OAILimits:
    """The OAI-PMH client's limits out of a harvest's settings."""
    return _picked(OAILimits, settings, _OAI_NAMES)


# The settings whose names differ from the fields they fill.
_FETCH_NAMES = {
    "deadline": "fetch_deadline",
    "retries": "max_retries",
    "total_connections": "concurrency",
}
_OAI_NAMES = {f.name: f"oai_{f.name}" for f in fields(OAILimits) if f.name != "user_agent"}


def _picked(
    cls: type[_Limits], settings: HarvestSettings, names: Mapping[str, str], **given: object
) -> _Limits:
    """A ``cls`` whose every field not ``given`` is the setting of the same name, or of the
    name ``names`` maps the field to."""
    picked = {
        f.name: getattr(settings, names.get(f.name, f.name))
        for f in fields(cls)
        if f.name not in given
    }
    return cls(**picked, **given)
