"""The crawl's factory as a run receives it, bound to the settings and imported lazily.

A run calls it only when it crawls (no provider found, ``--mode crawl``): the crawl's modules,
with their regular expressions and charset detection, are then imported, and an OAI-PMH
harvest, whose incremental runs are mostly start-up, never pays for them
(``tests/test_assembly.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harvester.settings import HarvestSettings

if TYPE_CHECKING:
    from harvester.archive.recorder import Recorder
    from harvester.crawl.crawler import Crawler
    from harvester.crawl.seen.seenset import SeenSet
    from harvester.http.fetch import Fetcher
    from harvester.storage.protocol import State
    from harvester.summary import Progress, Summary

# Builds a run's crawler and its seen-URL test from the run's parts (state, recorder, fetcher,
# summary, deadline, progress): :func:`harvester.crawl.build.build_crawler` with its settings
# bound.
CrawlerFactory = Callable[
    ["State", "Recorder", "Fetcher", "Summary", "float | None", "Progress | None"],
    "tuple[Crawler, SeenSet]",
]


def crawler_factory(settings: HarvestSettings) -> CrawlerFactory:
    """:func:`~harvester.crawl.build.build_crawler` bound to ``settings``, imported when called."""

    def build(*parts: Any) -> tuple[Crawler, SeenSet]:
        # The parts are typed once, by CrawlerFactory, which this function is checked against.
        from harvester.crawl.build import build_crawler

        return build_crawler(settings, *parts)

    return build
