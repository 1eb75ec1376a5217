"""The limits of the harvester's two HTTP clients, each picked out of the harvest's settings.

Every default lives in :class:`~harvester.settings.HarvestSettings` (so each can be set in the
TOML file or the environment); :func:`fetch_settings` builds the resource fetcher's
(:mod:`harvester.fetch`) and :func:`oai_limits` the OAI-PMH client's (:mod:`harvester.oaihttp`).
"""

from __future__ import annotations

from dataclasses import dataclass

from harvester.settings import HarvestSettings

__all__ = ["FetchSettings", "OAILimits", "fetch_settings", "oai_limits"]


@dataclass(frozen=True)
class FetchSettings:
    """Every limit of the fetcher; times in seconds, sizes in bytes. Built by
    :func:`fetch_settings`, whose fields of :class:`~harvester.settings.HarvestSettings` say
    what each means."""

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
    return FetchSettings(
        user_agent=settings.user_agent,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        deadline=settings.fetch_deadline,
        min_rate=settings.min_rate,
        rate_grace=settings.rate_grace,
        max_size=settings.max_size,
        max_header_size=settings.max_header_size,
        max_header_count=settings.max_header_count,
        max_redirects=settings.max_redirects,
        retries=settings.max_retries,
        backoff_base=settings.backoff_base,
        backoff_max=settings.backoff_max,
        per_host=settings.per_host,
        total_connections=settings.concurrency,
        obey_robots=not settings.ignore_robots,
        robots_max_size=settings.robots_max_size,
        robots_ttl=settings.robots_ttl,
        robots_error_ttl=settings.robots_error_ttl,
    )


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
    return OAILimits(
        user_agent=settings.user_agent,
        timeout=settings.oai_timeout,
        max_retries=settings.oai_max_retries,
        max_bytes=settings.oai_max_bytes,
        max_wait=settings.oai_max_wait,
        backoff=settings.oai_backoff,
        deadline=settings.oai_deadline,
    )
