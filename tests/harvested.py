"""Real collections for the tests of the commands that look at one (status, verify, report,
wacz): a generated site served by a real provider on loopback, harvested by the real
``harvester`` (over OAI-PMH, and crawled), once per test module."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coop_common.exitcode import ExitCode
from harvester.cli import main
from tests.conftest import start_provider
from tests.sites import Manifest, make_site

MISSING = "missing.html"


@dataclass(frozen=True)
class Harvested:
    """A finished collection and the site and provider it came from."""

    out: Path
    site: Manifest
    url: str

    def copy(self, to: Path) -> Path:
        """A copy of the collection to damage."""
        shutil.copytree(self.out, to)
        return to


@contextmanager
def harvested(tmp: Path, *, crawl: bool = False, pages: int = 30) -> Iterator[Harvested]:
    """Harvest a fresh site into ``tmp/out``; the provider keeps running inside the block.

    A crawl's site links ``missing.html`` from its home page: a 404 the crawl records.
    """
    site = make_site(tmp / "www", pages=pages, seed=7)
    if crawl:
        home = site.root / "index.html"
        link = f'<a href="{MISSING}">gone</a></body>'
        home.write_text(home.read_text(encoding="utf-8").replace("</body>", link), "utf-8")
    with start_provider(site.root, tmp / "index.sqlite") as server:
        out = tmp / "out"
        argv = ["harvest", server.url + "/", "--out", str(out), "--quiet"]
        code = main([*argv, "--mode", "crawl"] if crawl else argv)
        assert code == (ExitCode.PARTIAL if crawl else ExitCode.OK), code
        yield Harvested(out, site, server.url)
