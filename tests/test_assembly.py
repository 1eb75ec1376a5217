"""The run apart from its assembly: ``build_harvest`` builds the components from the
settings, and a ``Harvest`` given components of the caller's own uses exactly those.

Against the real provider over loopback; the injected state is a real SQLite state on a URL
of the test's choosing, the injected writer a real writer with a fixed clock and record ids.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvester.archive.cdx.index import CdxIndex
from harvester.archive.warc import RotatingWARCWriter
from harvester.run.assembly import build_harvest, fetch_settings, warc_prefix, warcinfo
from harvester.run.crawlfactory import crawler_factory
from harvester.run.harvest import Harvest
from harvester.settings import HarvestSettings, load_settings
from harvester.storage import open_state
from harvester.storage.sqlite.state import SQLiteState
from tests.conftest import start_provider
from tests.sites import make_site

FIXED = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def _settings(url: str, out: Path, **flags: object) -> HarvestSettings:
    return load_settings(site_url=url, out=out, quiet=True, environ={}, **flags)


def _injected(settings: HarvestSettings, state_url: str) -> Harvest:
    """A run whose state is at ``state_url`` and whose writer stamps FIXED and ids 1, 2, ..."""
    ids = (f"<urn:test:{n}>" for n in itertools.count(1))
    index = CdxIndex(settings.cdx_path)
    writer = RotatingWARCWriter(
        settings.warc_dir,
        prefix=warc_prefix(settings.site_url),
        warcinfo=warcinfo(settings),
        clock=lambda: FIXED,
        make_id=lambda: next(ids),
    )
    return Harvest(
        settings,
        state=open_state(state_url),
        writer=writer,
        index=index,
        fetch_settings=fetch_settings(settings),
        crawler_factory=crawler_factory(settings),
    )


def _warc_headers(out: Path) -> list[tuple[str, str]]:
    found = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                headers = rec.rec_headers
                found.append(
                    (headers.get_header("WARC-Record-ID"), headers.get_header("WARC-Date"))
                )
    return found


def test_an_injected_state_and_writer_are_the_ones_used(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=8, seed=2)
    elsewhere = tmp_path / "states" / "mine.sqlite"
    elsewhere.parent.mkdir()
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        settings = _settings(server.url, tmp_path / "out")
        run = _injected(settings, f"sqlite:///{elsewhere}")
        summary = run.run()
    assert summary.fetched == len(site.public)
    assert not settings.out.joinpath("state.sqlite").exists()
    with SQLiteState(elsewhere) as state:
        assert state.counts(server.url) == {"archived": len(site.public)}
        archived = list(state.resources(server.url, ("archived",)))
    headers = _warc_headers(settings.out)
    assert {date for _id, date in headers} == {"2024-01-02T03:04:05.000000Z"}
    ids = [record_id for record_id, _date in headers]
    assert sorted(ids, key=lambda i: int(i[10:-1])) == [
        f"<urn:test:{n}>" for n in range(1, len(ids) + 1)
    ]
    assert {r.record_id for r in archived} <= set(ids)


def test_the_fetching_processes_use_the_injected_state(tmp_path: Path) -> None:
    """A forked fetching process opens the run's state, not the one its settings name: it
    wrote its marks into ``OUT/state.sqlite`` before, and the run's state kept them pending."""
    site = make_site(tmp_path / "www", pages=30, seed=3)
    elsewhere = tmp_path / "states" / "mine.sqlite"
    elsewhere.parent.mkdir()
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        settings = _settings(server.url, tmp_path / "out", fetch_processes=2)
        summary = _injected(settings, f"sqlite:///{elsewhere}").run()
    assert summary.fetched == len(site.public) and summary.coverage == 1.0
    assert not settings.out.joinpath("state.sqlite").exists()
    with SQLiteState(elsewhere) as state:
        assert state.counts(server.url) == {"archived": len(site.public)}


def test_the_factory_builds_the_state_the_settings_name(tmp_path: Path) -> None:
    default = build_harvest(_settings("http://127.0.0.1:9/", tmp_path / "out"))
    assert default.state.url == f"sqlite:///{tmp_path / 'out' / 'state.sqlite'}"
    chosen = tmp_path / "elsewhere.sqlite"
    named = build_harvest(_settings("http://127.0.0.1:9/", tmp_path, state=f"sqlite:///{chosen}"))
    assert isinstance(named.state, SQLiteState) and named.state.path == chosen


def test_a_harvest_over_oai_pmh_imports_none_of_the_crawl(tmp_path: Path) -> None:
    """The crawl's modules (their regular expressions, charset detection) are imported by a run
    that crawls, not by every start: an incremental OAI-PMH harvest is mostly start-up."""
    import subprocess
    import sys

    probe = (
        "import sys, harvester.cli, harvester.run.assembly\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('harvester.crawl.'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert not loaded & {
        "harvester.crawl.build",
        "harvester.crawl.crawler",
        "harvester.crawl.links",
        "harvester.crawl.frontier",
        "harvester.crawl.seen.seenset",
    }, loaded


def test_the_version_is_read_without_the_installed_metadata() -> None:
    """The DIDL builder's process (and the CLI's) start without importlib.metadata, which cost
    each 50-100 ms; the version written in coop_common is the one installed."""
    import importlib.metadata
    import subprocess
    import sys

    import coop_common

    probe = (
        "import sys, harvester.cli, harvester.records.didlbuilder\n"
        "print('importlib.metadata' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    assert coop_common.__version__ == importlib.metadata.version("coop-archive")


def test_records_mode_without_linked_resources_imports_no_fetcher(tmp_path: Path) -> None:
    """Records mode with ``--linked none`` fetches nothing but the list (over ``requests``):
    neither the fetcher nor aiohttp, whose import builds SSL contexts (a tenth of a second of
    CPU), is imported, nor the crawl, nor the landing pages' HTML parsing; the run still
    archives every record."""
    import json
    import subprocess
    import sys

    from tests.servers import start_wsgi

    probe = (
        "import json, sys\n"
        "from harvester.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(json.dumps({'code': code, 'loaded': sorted(m for m in sys.modules"
        " if m.split('.')[0] == 'aiohttp'"
        " or m in ('harvester.http.fetch', 'harvester.crawl.crawler', "
        "'harvester.records.landing'))}))"
    )
    with start_wsgi("tests.records_repo:repository", {}, ready_path="/_log") as server:
        argv = ["harvest", server.url + "/oai", "--out", str(tmp_path / "c"), "--quiet",
                "--json", "--mode", "records", "--linked", "none"]  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120
        )
    lines = done.stdout.strip().splitlines()
    summary, probed = json.loads(lines[-2]), json.loads(lines[-1])
    assert probed == {"code": 0, "loaded": []} and summary["records"] == 12, done.stderr
