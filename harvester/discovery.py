"""Finding a site's OAI-PMH endpoint, or deciding that it has none.

``--oai`` wins; otherwise ``SITE_URL/oai`` and then ``SITE_URL/modoai`` are probed with
``verb=Identify`` and only a well-formed Identify response is accepted. With none, ``--mode
auto`` falls back to crawling the site's links. What was found is
recorded in the state: the endpoint, its granularity and its deletedRecord policy.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from harvester.exceptions import DiscoveryError
from harvester.limits import oai_limits
from harvester.oai import EndpointInfo, OAIClient, probe
from harvester.settings import HarvestSettings
from harvester.state import HarvestState

log = logging.getLogger(__name__)


def discover(settings: HarvestSettings, state: HarvestState) -> EndpointInfo | None:
    """The endpoint to harvest, or None to crawl; DiscoveryError with ``--mode oai`` and none."""
    if settings.mode == "crawl":
        return None
    info = _identify(settings)
    if info is None:
        if settings.mode == "auto":
            log.info("no OAI-PMH endpoint at %s: crawling it instead", settings.site_url)
            return None
        raise DiscoveryError(
            f"no OAI-PMH endpoint at {settings.site_url.rstrip('/')}/oai or /modoai; "
            "give one with --oai, or crawl with --mode crawl"
        )
    log.info("OAI-PMH endpoint %s (granularity %s)", info.endpoint, info.granularity)
    state.record_endpoint(settings.site_url, info.endpoint, info.granularity, info.deleted_record)
    return info


def _identify(settings: HarvestSettings) -> EndpointInfo | None:
    if settings.oai:
        with OAIClient(settings.oai, limits=oai_limits(settings)) as client:
            return client.identify()
    return probe(settings.site_url, limits=replace(oai_limits(settings), max_retries=1))
