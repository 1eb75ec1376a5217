"""Finding how to list a site: its OAI-PMH endpoint, its ResourceSync source, or neither.

``--oai`` wins; otherwise ``SITE_URL`` itself (when it has a path: it may be the endpoint, as
sickle's users pass it), then ``SITE_URL/oai`` and ``SITE_URL/modoai`` are probed with
``verb=Identify`` and only a well-formed Identify response is accepted. With none, a
ResourceSync Source Description at ``SITE_URL/.well-known/resourcesync`` is looked for
(:mod:`harvester.listed.resourcesync`); with none either, ``--mode auto`` falls back to crawling the
site's links, seeded from its sitemaps. ``--mode resourcesync`` takes ResourceSync only. What
was found is recorded in the state: the endpoint (or Capability List), its granularity and
its deletedRecord policy.

Before all that, the site (or ``--oai``, when given) must be reachable at all: its host
resolves, its port accepts a connection and, for ``https``, speaks TLS. Otherwise the run
stops with an :class:`UnreachableError` naming the cause, rather than probing, crawling and
reporting a harvest of nothing. Names under ``.invalid`` never resolve (RFC 6761 §6.4): no
query is sent for them.
"""

from __future__ import annotations

import logging
import random
import socket
import ssl
import time
from dataclasses import replace
from datetime import UTC, datetime
from urllib.parse import urlsplit

from harvester.exceptions import (
    DiscoveryError,
    HarvestError,
    PermanentFetchError,
    UnreachableError,
)
from harvester.http.limits import oai_limits
from harvester.listed.resourcesync import ResourceSyncReader, ResourceSyncSource
from harvester.oai.client import EndpointInfo, OAIClient, probe
from harvester.oai.connectiontransport import kept_alive
from harvester.oai.httpclient import Http
from harvester.settings import HarvestSettings
from harvester.storage.protocol import State

log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 10.0  # seconds for the connection and the TLS handshake, each


def discover(settings: HarvestSettings, state: State) -> EndpointInfo | ResourceSyncSource | None:
    """The endpoint or ResourceSync source to harvest, or None to crawl; DiscoveryError with
    ``--mode oai`` or ``resourcesync`` and none, UnreachableError when the site (or ``--oai``)
    cannot be reached."""
    reach(settings.oai or settings.site_url)
    if settings.mode == "crawl":
        check_start(settings)
        return None
    info = None if settings.mode == "resourcesync" else _identify(settings)
    if info is None and settings.mode in ("auto", "resourcesync"):
        check_start(settings)
        return _resourcesync(settings, state)
    if info is None:
        raise DiscoveryError(
            f"no OAI-PMH endpoint at {where_probed(settings.site_url)}; "
            "give one with --oai, or crawl with --mode crawl"
        )
    log.info("OAI-PMH endpoint %s (granularity %s)", info.endpoint, info.granularity)
    if settings.oai is None and info.endpoint.rstrip("/") == settings.site_url.rstrip("/"):
        log.info("%s is an OAI-PMH endpoint itself", settings.site_url)
    state.record_endpoint(settings.site_url, info.endpoint, info.granularity, info.deleted_record)
    return info


def source_kind(found: EndpointInfo | ResourceSyncSource | None) -> str:
    """What :func:`discover` found, in a word: ``oai``, ``resourcesync`` or ``crawl``."""
    if found is None:
        return "crawl"
    return "resourcesync" if isinstance(found, ResourceSyncSource) else "oai"


def endpoint_url(found: EndpointInfo | ResourceSyncSource | None) -> str | None:
    """The OAI-PMH endpoint or the Capability List that :func:`discover` found."""
    if isinstance(found, ResourceSyncSource):
        return found.capability_list
    return None if found is None else found.endpoint


def check_start(settings: HarvestSettings) -> None:
    """A start URL with a path (no endpoint) must exist: a typo'd page answering 404 or 410
    stops the run with a DiscoveryError, as wget stops, rather than harvesting the whole site
    from its root. Any other answer, or none, leaves the run to go on as it would."""
    if not urlsplit(settings.site_url).path.strip("/"):
        return
    transport = kept_alive()
    limits = replace(oai_limits(settings), max_retries=1)
    http = Http(transport, limits, time.sleep, lambda: datetime.now(UTC), random.Random())
    try:
        http.get(settings.site_url, {})
    except PermanentFetchError as exc:
        if exc.status in (404, 410):
            raise DiscoveryError(
                f"{settings.site_url} answers HTTP {exc.status}: no such page to start from;"
                " check its path, or give the site's root"
            ) from None
    except HarvestError as exc:
        log.info("the start URL %s: %s", settings.site_url, exc)
    finally:
        transport.close()


def _resourcesync(settings: HarvestSettings, state: State) -> ResourceSyncSource | None:
    limits = replace(oai_limits(settings), max_retries=1)
    with ResourceSyncReader(settings.site_url, limits) as reader:
        source = reader.discover()  # one retry, as the OAI-PMH probe
        problem = reader.problem
    if source is not None:
        log.info("ResourceSync capability list %s", source.capability_list)
        state.record_endpoint(
            settings.site_url, source.capability_list, "YYYY-MM-DDThh:mm:ssZ", "persistent"
        )
        return source
    if settings.mode == "resourcesync":
        raise DiscoveryError(
            f"no ResourceSync source description at {settings.site_url.rstrip('/')}"
            f"/.well-known/resourcesync ({problem})"
        )
    log.info("no OAI-PMH endpoint or ResourceSync source at %s: crawling", settings.site_url)
    return None


def _identify(settings: HarvestSettings) -> EndpointInfo | None:
    if settings.oai:
        with OAIClient(settings.oai, limits=oai_limits(settings)) as client:
            return client.identify()
    return probe(
        settings.site_url,
        paths=probe_paths(settings.site_url),
        limits=replace(oai_limits(settings), max_retries=1),
    )


def probe_paths(site_url: str) -> tuple[str, ...]:
    """Where an endpoint is looked for below ``site_url``, in order.

    A URL with a path may be an endpoint itself (DSpace's /oai/request, EPrints'
    /cgi/oai2): asked first, so a repository answering under every path of its prefix is
    not taken at URL/oai. A site's root is never asked, so a crawl sends nothing more.

    >>> probe_paths("https://repo.example.org/oai/request"), probe_paths("https://a.example/")
    (('', '/oai', '/modoai'), ('/oai', '/modoai'))
    """
    itself = ("",) if urlsplit(site_url).path.strip("/") else ()
    return (*itself, "/oai", "/modoai")


def where_probed(site_url: str) -> str:
    """The URLs :func:`probe_paths` names, for an error line.

    >>> where_probed("https://r.example/oai2d")
    'https://r.example/oai2d, https://r.example/oai2d/oai or https://r.example/oai2d/modoai'
    """
    places = [site_url.rstrip("/") + path for path in probe_paths(site_url)]
    return ", ".join(places[:-1]) + " or " + places[-1]


def records_mode(settings: HarvestSettings, info: EndpointInfo, state: State) -> bool | None:
    """Whether to ingest ``info``'s repository in records mode: ``--mode records``, or what
    an earlier run found (its identifiers are not http(s) URLs, as in DSpace, EPrints,
    Invenio and OJS: ``oai:repo.example.org:1234``); None while no run has listed it yet,
    when the first page of the harvest's own list decides
    (:class:`~harvester.listed.listing.Lister`),
    so a mod_oai site is asked nothing more."""
    if settings.mode == "records":
        return True
    return state.items.records_mode(info.endpoint)


def reach(url: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Connect to ``url``'s host and port, and shake hands for ``https``; or raise
    :class:`UnreachableError` naming the URL and the cause. Sends no request."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if host == "invalid" or host.endswith(".invalid"):
        raise UnreachableError(f"cannot reach {url}: unknown host {host} (.invalid, RFC 6761)")
    try:
        sock = socket.create_connection((host, port), timeout)
    except socket.gaierror as exc:
        raise UnreachableError(
            f"cannot reach {url}: unknown host {host} ({exc.strerror})"
        ) from None
    except TimeoutError:
        raise UnreachableError(f"cannot reach {url}: no connection within {timeout:g} s") from None
    except OSError as exc:
        raise UnreachableError(f"cannot reach {url}: {exc.strerror or exc}") from None
    with sock:
        if parts.scheme == "https":
            _handshake(sock, host, url)


def _handshake(sock: socket.socket, host: str, url: str) -> None:
    """Only that the port speaks TLS: certificates are the fetcher's business."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with context.wrap_socket(sock, server_hostname=host or None):
            pass
    except (ssl.SSLError, OSError) as exc:
        cause = getattr(exc, "reason", None) or exc.strerror or exc
        raise UnreachableError(
            f"cannot reach {url}: TLS handshake failed ({cause}); is it a TLS port?"
        ) from None
