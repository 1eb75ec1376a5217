"""A site's complete URL list, without archiving anything: ``harvester urls SITE_URL``.

The counting problem answered by the site itself: its OAI-PMH provider lists every item
(ListIdentifiers, §4.3, through ``oai.py``), the identifier of each being its URL, deleted
ones flagged. The endpoint is found as a harvest finds it (``--oai``, else ``SITE_URL``
itself when it has a path, then ``SITE_URL/oai`` and ``/modoai``). A records repository's
identifiers (``oai:…``, ``hdl:…``) are not URLs: :func:`is_url` tells them apart, and the
command says which it printed. ResourceSync (a second source of URL lists) plugs in as another
:class:`UrlSource`; none is written yet, so a site without a provider is an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Protocol

from harvester.exceptions import DiscoveryError, NoRecordsMatch, ProtocolError
from harvester.http.limits import oai_limits
from harvester.oai.client import OAIClient, probe
from harvester.oai.models import ListedHeader
from harvester.run.discovery import probe_paths, reach, where_probed
from harvester.settings import defaults


class UrlSource(Protocol):
    """Where a site's URL list comes from: an OAI-PMH provider, or (later) ResourceSync."""

    name: str

    def urls(self) -> Iterator[ListedHeader]: ...


@dataclass
class OaiSource:
    """Every identifier a provider lists, across resumption tokens."""

    endpoint: str
    set_spec: str | None = None
    name: str = "oai-pmh"

    def urls(self) -> Iterator[ListedHeader]:
        with OAIClient(self.endpoint) as client:
            try:
                for page in client.list_identifiers(set_spec=self.set_spec):
                    if page.broken:  # a list with a hole is no complete list
                        raise ProtocolError(page.broken[0])
                    yield from page.headers
            except NoRecordsMatch:
                return


def find_source(site_url: str, oai: str | None = None, set_spec: str | None = None) -> UrlSource:
    """The site's URL list: ``oai``, or the endpoint probed as a harvest probes it
    (SITE_URL itself when it has a path, then SITE_URL/oai and /modoai).

    This is where a ResourceSync source (a capability list under ``/.well-known/resourcesync``)
    would be tried next. DiscoveryError when the site has none, UnreachableError when it
    cannot be reached.
    """
    reach(oai or site_url)
    if oai:
        return OaiSource(oai, set_spec)
    limits = replace(oai_limits(defaults()), max_retries=1)
    info = probe(site_url, paths=probe_paths(site_url), limits=limits)
    if info is None:
        raise DiscoveryError(
            f"no URL list at {site_url.rstrip('/')}: no OAI-PMH endpoint at "
            f"{where_probed(site_url)} (give one with --oai)"
        )
    return OaiSource(info.endpoint, set_spec)


def is_url(identifier: str) -> bool:
    """Whether an identifier is a resource's URL (a mod_oai site's), not a records
    repository's (``oai:``, ``hdl:``, ``info:doi/``…).

    >>> is_url("https://www.example.org/a.html"), is_url("oai:zenodo.org:1234")
    (True, False)
    """
    return identifier.lower().startswith(("http://", "https://"))
