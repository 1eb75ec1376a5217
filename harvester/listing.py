"""Listing a site through its provider: what is there, and what changed since the last run.

Strategy ``get`` lists identifiers (ListIdentifiers) and leaves the fetching to the harvest;
strategy ``didl`` lists records in ``oai_didl`` (ListRecords), which carry the resources by
value as mod_oai intended, archives each raw OAI-PMH exchange and each carried resource, and
leaves only resources given by reference to be fetched. Either way the list position is saved
after every page, so a crash mid-list resumes at the saved token, and a token the provider no
longer accepts restarts the list from the saved ``from`` date.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
from collections.abc import Callable, Iterator

from lxml import etree

from harvester.archive.recorder import Recorder
from harvester.exceptions import BadResumptionToken, NoRecordsMatch
from harvester.limits import oai_limits
from harvester.oai import EndpointInfo, ListedHeader, OAIClient, RawPage, overlap_from
from harvester.settings import HarvestSettings
from harvester.state import HarvestState, Listed
from harvester.summary import Summary

log = logging.getLogger(__name__)
DIDL = "{urn:mpeg:mpeg21:2002:02-DIDL-NS}"
PRES = "{urn:coop-archive:preservation:1.0}"


class Lister:
    def __init__(
        self,
        settings: HarvestSettings,
        state: HarvestState,
        endpoint: EndpointInfo,
        recorder: Recorder,
        summary: Summary,
    ) -> None:
        self.settings = settings
        self.state = state
        self.endpoint = endpoint
        self.recorder = recorder
        self.summary = summary
        self.site = settings.site_url

    def run(self, expired: Callable[[], bool]) -> bool:
        """List every set asked for (or everything); True when every list ran to its end."""
        return all(self._list(set_spec, expired) for set_spec in self.settings.sets or (None,))

    def advance_from(self) -> None:
        """The next run lists from here: this list's start, held back to anything unarchived."""
        source = self.state.source(self.site)
        if source is None or source.list_response_date is None:
            return
        oldest = self.state.oldest_unarchived(self.site)
        until = (
            source.list_response_date if oldest is None else min(oldest, source.list_response_date)
        )
        self.state.set_harvested_until(self.site, until)

    # -- one list --------------------------------------------------------------------

    def _list(self, set_spec: str | None, expired: Callable[[], bool]) -> bool:
        source = self.state.source(self.site)
        token = None
        if source is not None and source.list_active and source.list_set == set_spec:
            token, from_ = source.list_token, source.list_from
            log.info("resuming the list from its saved position")
        else:
            from_ = self._from_date()
            self.state.start_list(self.site, from_, set_spec)
        try:
            return self._pages(from_, set_spec, token, expired)
        except BadResumptionToken:
            log.warning("the provider refused the saved token; restarting the list from %s", from_)
            self.state.start_list(self.site, from_, set_spec)
            return self._pages(from_, set_spec, None, expired)

    def _from_date(self) -> str | None:
        source = self.state.source(self.site)
        if source is None or source.harvested_until is None:
            return None
        return overlap_from(source.harvested_until, self.endpoint.granularity)

    def _pages(
        self,
        from_: str | None,
        set_spec: str | None,
        token: str | None,
        expired: Callable[[], bool],
    ) -> bool:
        try:
            for listed, page_token, response_date, page in self._fetch(from_, set_spec, token):
                self.state.record_page(self.site, listed, page_token, response_date)
                self.summary.listed += len(listed)
                if page is not None:
                    self._archive_page(page)
                if expired():
                    return False
        except NoRecordsMatch:
            # The next run lists from the same date: an empty list moves nothing forward.
            log.info("nothing new since %s", from_)
        self.state.finish_list(self.site)
        return True

    def _fetch(
        self, from_: str | None, set_spec: str | None, token: str | None
    ) -> Iterator[tuple[list[Listed], str | None, str, RawPage | None]]:
        args = {
            "from_": None if token else from_,
            "set_spec": None if token else set_spec,
            "resumption_token": token,
        }
        with OAIClient(self.endpoint.endpoint, limits=oai_limits(self.settings)) as client:
            if self.settings.oai_strategy == "didl":
                for raw in client.list_records_raw(metadata_prefix="oai_didl", **args):
                    listed = [_listed(r.header) for r in raw.records]
                    yield listed, raw.token, raw.response_date, raw
            else:
                for page in client.list_identifiers(metadata_prefix="oai_dc", **args):
                    yield [_listed(h) for h in page.headers], page.token, page.response_date, None

    # -- the didl strategy -------------------------------------------------------------

    def _archive_page(self, page: RawPage) -> None:
        """The raw exchange, then every resource the page carries by value: marked archived
        with one commit, made before their WARC file can be finished."""
        self.recorder.exchange(page.exchange)
        with self.recorder.writer.one_file(), self.state.batch():
            self._archive_carried(page)

    def _archive_carried(self, page: RawPage) -> None:
        for raw in page.records:
            meta = raw.metadata
            if raw.header.deleted or meta is None:
                continue
            carried = _carried_resource(meta)
            res = self.state.get(raw.header.identifier)
            if carried is None or res is None or res.status != "pending":
                continue  # by reference only: the fetch step GETs it
            mime, body = carried
            capture = self.recorder.carried(res, raw.header.identifier, mime, body)
            self.state.mark_archived(res.url, capture, None)
            self.summary.fetched += 1
            self.summary.bytes += len(body)


def _listed(header: ListedHeader) -> Listed:
    return Listed(
        url=header.identifier,
        identifier=header.identifier,
        datestamp=header.datestamp,
        set_specs=header.set_specs,
        deleted=header.deleted,
    )


def _carried_resource(didl: etree._Element) -> tuple[str, bytes] | None:
    """The resource a DIDL carries by value, if its bytes match the DIDL's SHA-256."""
    for resource in didl.iter(f"{DIDL}Resource"):
        if resource.get("encoding") != "base64":
            continue
        try:
            body = base64.b64decode(resource.text or "", validate=True)
        except (binascii.Error, ValueError):
            log.warning("a DIDL carried undecodable base64; fetching by reference instead")
            return None
        expected = didl.findtext(f".//{PRES}digest[@algorithm='sha256']")
        if expected and hashlib.sha256(body).hexdigest() != expected:
            log.warning("a DIDL's bytes do not match its digest; fetching by reference instead")
            return None
        return resource.get("mimeType") or "application/octet-stream", body
    return None
