"""Finding a site's OAI-PMH endpoint, or deciding that it has none.

``--oai`` wins; otherwise ``SITE_URL/oai`` and then ``SITE_URL/modoai`` are probed with
``verb=Identify`` and only a well-formed Identify response is accepted. What was found is
recorded in the state: the endpoint, its granularity and its deletedRecord policy.
"""

from __future__ import annotations

import logging

from harvester.exceptions import DiscoveryError
from harvester.oai import EndpointInfo, OAIClient, probe
from harvester.settings import HarvestSettings
from harvester.state import HarvestState

log = logging.getLogger(__name__)


def discover(settings: HarvestSettings, state: HarvestState) -> EndpointInfo:
    """The endpoint to harvest; DiscoveryError when there is none to use."""
    if settings.mode == "crawl":
        raise DiscoveryError(
            "--mode crawl: link crawling is not available in this version; "
            "harvest a site that runs an OAI-PMH provider"
        )
    info = _identify(settings)
    if info is None:
        raise DiscoveryError(
            f"no OAI-PMH endpoint at {settings.site_url.rstrip('/')}/oai or /modoai; "
            "give one with --oai (link crawling is not available in this version)"
        )
    log.info("OAI-PMH endpoint %s (granularity %s)", info.endpoint, info.granularity)
    state.record_endpoint(settings.site_url, info.endpoint, info.granularity, info.deleted_record)
    return info


def _identify(settings: HarvestSettings) -> EndpointInfo | None:
    if settings.oai:
        with OAIClient(settings.oai, user_agent=settings.user_agent) as client:
            return client.identify()
    return probe(settings.site_url, user_agent=settings.user_agent, max_retries=1)
