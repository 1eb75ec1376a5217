"""What the crawl may fetch: the seeds' hosts, ``--include``/``--exclude`` regexes, a depth
limit, and the trap rules (over-long URLs, deep or repeating paths, endless query spaces).

Every URL the crawl would fetch passes here, whatever named it: a link, a redirect, a seed
(SITE_URL, ``--seed``, a policy's seeds) or a site's sitemap. Sitemap files themselves, like
robots.txt, are prerequisites rather than pages: they are read only from the seeds' hosts
(:meth:`Scope.on_site`), however robots.txt or a sitemap index names them.

A refused URL is logged once with its reason and counted, never silently dropped.

Most links name a URL met before (nine in ten on a typical site). A URL admitted once is
admitted again at any depth up to the limit, since every other rule is fixed for the crawl
or, for query variants, admits a query string it admitted before; so the last
``ADMITTED_CACHE`` URLs admitted are remembered, and for those only the depth is checked.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable

from harvester.crawl.traps import QueryVariantCounter, TrapRules, check_trap
from harvester.crawl.urls import host_of, host_of_canonical

log = logging.getLogger(__name__)

ADMITTED_CACHE = 65_536  # URLs whose admission is remembered (some 10 MB at most)


class Scope:
    def __init__(
        self,
        hosts: Iterable[str],
        *,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_depth: int = 20,
        traps: TrapRules | None = None,
    ) -> None:
        self.hosts = frozenset(hosts)
        self.include = [re.compile(p) for p in include]
        self.exclude = [re.compile(p) for p in exclude]
        self.max_depth = max_depth
        self.traps = traps or TrapRules()
        self.variants = QueryVariantCounter(self.traps.max_query_variants_per_path)
        self.refused: Counter[str] = Counter()
        self._admitted: dict[str, None] = {}  # insertion-ordered: the oldest goes first

    def on_site(self, url: str) -> bool:
        """Whether ``url`` is on one of the seeds' hosts (an unparsable URL is not)."""
        try:
            return host_of(url) in self.hosts
        except ValueError:
            return False

    def refusal(self, url: str, depth: int) -> str | None:
        """Why ``url`` is out of scope, or None when it may be crawled."""
        reason = self._reason(url, depth)
        if reason is not None:
            kind = reason.split(":", 1)[0]
            if self.refused[kind] < 20:  # the first few of each kind, then only counted
                log.info("refused %s: %s", url, reason)
            self.refused[kind] += 1
        return reason

    def _reason(self, url: str, depth: int) -> str | None:
        if url in self._admitted:  # every rule but the depth admitted it already
            return None if depth <= self.max_depth else self._too_deep()
        reason = self._first_reason(url, depth)
        if reason is None:
            admitted = self._admitted
            if len(admitted) >= ADMITTED_CACHE:
                del admitted[next(iter(admitted))]
            admitted[url] = None
        return reason

    def _too_deep(self) -> str:
        return f"depth: more than {self.max_depth} links from a seed"

    def _first_reason(self, url: str, depth: int) -> str | None:
        if host_of_canonical(url) not in self.hosts:  # the crawl's URLs are canonical
            return "off-site: another host"
        if depth > self.max_depth:
            return self._too_deep()
        if self.include and not any(p.search(url) for p in self.include):
            return "include: matches no --include pattern"
        if any(p.search(url) for p in self.exclude):
            return "exclude: matches an --exclude pattern"
        trap = check_trap(url, self.traps) or self.variants.check(url)
        return None if trap is None else f"trap: {trap}"
