"""Builds a harvest run from its settings: the state, the WARC writer, the CDXJ index, the
fetcher's settings and the crawl's factory, each made here and handed to :class:`Harvest`,
which only runs them. The CLI and the demo build every run here; a test may build a
``Harvest`` with any component of its own instead."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from harvester import __version__
from harvester.archive.cdx.index import CdxIndex
from harvester.archive.warc import RotatingWARCWriter
from harvester.exceptions import ArchiveError
from harvester.http.limits import fetch_settings
from harvester.run.crawlfactory import crawler_factory
from harvester.run.harvest import Harvest
from harvester.settings import HarvestSettings
from harvester.storage import open_state
from harvester.summary import Progress

log = logging.getLogger(__name__)


def build_harvest(settings: HarvestSettings, progress: Progress | None = None) -> Harvest:
    """A run of ``settings``, its components built from them (none opened yet)."""
    index = CdxIndex(settings.cdx_path)
    state = open_state(settings.state_url)
    if state.leases is not None:
        state.leases.seconds = settings.lease
    return Harvest(
        settings,
        state=state,
        writer=build_writer(settings, index),
        index=index,
        fetch_settings=fetch_settings(settings),
        crawler_factory=crawler_factory(settings),
        progress=progress,
    )


def build_writer(settings: HarvestSettings, index: CdxIndex) -> RotatingWARCWriter:
    """The rotating WARC writer; each file it finishes is indexed from the lines it made."""

    def index_lines(warc_name: str, lines: list[str]) -> None:
        try:
            index.add_lines(warc_name, lines)
        except ArchiveError as exc:  # the run reads the file back into the index at its end
            log.warning("cannot index %s yet: %s", warc_name, exc)

    return RotatingWARCWriter(
        settings.warc_dir,
        prefix="-".join(filter(None, (warc_prefix(settings.site_url), settings.worker_id))),
        max_size=settings.warc_max_size,
        warcinfo=warcinfo(settings),
        durable=settings.durable,
        on_finish=index_lines,
    )


def warcinfo(settings: HarvestSettings) -> dict[str, str]:
    """The fields of the warcinfo record that opens each WARC file."""
    return {
        "software": f"coop-archive-harvester/{__version__}",
        "robots": "ignore" if settings.ignore_robots else "obey",
        "isPartOf": settings.collection_name,
        "description": f"OAI-PMH-driven harvest of {settings.site_url}",
    }


def warc_prefix(site_url: str) -> str:
    """The WARC file names' prefix: the site's host, safe in a file name.

    >>> warc_prefix("http://127.0.0.1:8080/")
    '127.0.0.1'
    """
    host = urlsplit(site_url).hostname or "site"
    return "".join(c if c.isalnum() or c in "-." else "-" for c in host)
