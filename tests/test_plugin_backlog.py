"""A slow plugin never holds the listing back, and a harvest made while it runs is complete.

``oai-provider serve`` (a real process, as an owner starts it) lists every file at once while
its plugin still runs; a harvest with default flags made while the analyses restamp the
records ends with every file, and with ``--strategy didl`` every file's archived record
carries its analysis (the catch-up pass, ``harvester/listed/catchup.py``); the next run has
nothing to do; a provider killed mid-analysis resumes at its next start, and a file is
analysed once a version (counted by the plugin itself).

The plugin is a small script that waits for a gate file the test (or the held provider of
``tests/apps.py``) opens, so "slow" is as slow as the test wants, whatever the machine's load.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

import pytest
from lxml import etree
from sickle import Sickle

from harvester.run.assembly import build_harvest
from harvester.settings import load_settings
from tests.servers import RunningServer, start_command, start_wsgi
from tests.test_harvest import listed_records

CLI = [sys.executable, "-m", "server_module.cli"]
BASE = "http://example.org"
FILES = {f"page{i}.txt": f"page {i}\n".encode() for i in range(8)}
LISTED_WITHIN_S = 15.0  # from the process's start to a complete listing (a loaded machine)
GATE_WAIT_S = 60.0  # the plugin's own bound on its wait; the settings give it 90
NS = {
    "oai": "http://www.openarchives.org/OAI/2.0/",
    "didl": "urn:mpeg:mpeg21:2002:02-DIDL-NS",
    "dii": "urn:mpeg:mpeg21:2002:01-DII-NS",
    "pres": "urn:coop-archive:preservation:1.0",
}
# Logs "start PATH" when run and "done PATH" when it gives its result; a run whose provider
# was killed (its parent gone) gives none.
SLOW = f"""\
import os, sys, time
parent = os.getppid()
with open(sys.argv[3], "a") as log:
    log.write("start " + sys.argv[2] + "\\n")
deadline = time.monotonic() + {GATE_WAIT_S}
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    if os.getppid() != parent:
        sys.exit(1)
    time.sleep(0.05)
with open(sys.argv[3], "a") as log:
    log.write("done " + sys.argv[2] + "\\n")
print("seen", os.path.getsize(sys.argv[2]))
"""

T = TypeVar("T")


def poll(what: Callable[[], T | None], seconds: float, message: str) -> T:
    """``what()`` once it is not None, or fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = what()
        if found is not None:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{message} within {seconds} s")


class Site:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "www"
        self.root.mkdir()
        for name, data in FILES.items():
            (self.root / name).write_bytes(data)
        self.gate = tmp_path / "gate"
        self.runs = tmp_path / "runs.log"
        self.index = tmp_path / "index.sqlite"
        self.script = tmp_path / "slow.py"
        self.script.write_text(SLOW)
        self.config = tmp_path / "provider.toml"
        self.config.write_text(
            "builtin_plugins = []\n"
            "plugin_workers = 1\n"
            "plugin_timeout = 90\n"
            "[[plugin]]\n"
            'label = "slow"\n'
            f"command = {self.command!r}\n".replace("'", '"')
        )

    @property
    def command(self) -> list[str]:
        return [sys.executable, str(self.script), str(self.gate), "%s", str(self.runs)]

    def serve(self) -> RunningServer:
        argv = [
            *CLI, "serve", str(self.root), "--config", str(self.config), "--index",
            str(self.index), "--base-url", BASE, "--port", "{port}", "--workers", "1",
        ]  # fmt: skip
        return start_command(argv, ready_path="/oai?verb=Identify", timeout=LISTED_WITHIN_S)

    def analysed(self) -> dict[str, int]:
        """Results in the index, per plugin label."""
        with closing(sqlite3.connect(self.index)) as conn:
            rows = conn.execute("SELECT label, count(*) FROM analyses GROUP BY label")
            return dict(rows.fetchall())

    def done(self) -> dict[str, int]:
        """The plugin's runs that gave a result, per file name."""
        lines = self.runs.read_text().splitlines() if self.runs.exists() else []
        names = [line.split(" ", 1)[1].rpartition("/")[2] for line in lines if line[:4] == "done"]
        return {name: names.count(name) for name in sorted(set(names))}

    def started(self) -> int:
        lines = self.runs.read_text().splitlines() if self.runs.exists() else []
        return sum(line.startswith("start ") for line in lines)


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


def datestamps(url: str, **args: str) -> dict[str, str]:
    headers = Sickle(url + "/oai").ListIdentifiers(metadataPrefix="oai_didl", **args)
    return {h.identifier.rpartition("/")[2]: h.datestamp for h in headers}


def analysis(server: RunningServer, name: str) -> tuple[str, str] | None:
    """The record's datestamp and its ``slow`` analysis's text, once it has one."""
    record = Sickle(server.url + "/oai").GetRecord(
        identifier=f"{BASE}/{name}", metadataPrefix="oai_didl"
    )
    root = etree.fromstring(record.raw.encode())
    found = root.find(".//pres:analysis[@label='slow']", NS)
    if found is None:
        return None
    stamp = root.findtext(".//oai:header/oai:datestamp", namespaces=NS) or ""
    return stamp, "".join(found.itertext())


def test_the_first_list_names_every_file_while_the_plugin_runs_and_its_results_restamp(
    site: Site,
) -> None:
    started = time.monotonic()
    with site.serve() as server:
        listed = datestamps(server.url)
        assert time.monotonic() - started < LISTED_WITHIN_S
        assert set(listed) == set(FILES)
        poll(lambda: site.started() or None, 30, "the plugin's first run")
        assert site.analysed() == {}  # the plugin is still waiting at its gate
        first = max(listed.values())
        poll(  # so that the analyses' second is a later one
            lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > first or None,
            5,
            "the clock passed the listing's second",
        )
        site.gate.write_text("open")
        stamps = {}
        for name, data in FILES.items():
            stamp, text = poll(lambda name=name: analysis(server, name), 120, f"{name}'s analysis")
            assert stamp > listed[name]  # its record changed: a new datestamp
            assert f"seen {len(data)}" in text
            stamps[name] = stamp
        # an incremental harvest from the analyses' first second lists every record again
        assert set(datestamps(server.url, **{"from": min(stamps.values())})) == set(FILES)
    # only the plugin the settings name: `builtin_plugins = []` holds in serve's workers too
    assert site.analysed() == {"slow": len(FILES)}


def held(site: Site, tmp_path: Path) -> RunningServer:
    """The provider under a real server, its list pages after the first held until its
    analyses are committed (``tests.apps.held_provider``)."""
    settings: dict[str, Any] = {
        "gate": str(site.gate),
        "docroot": str(site.root),
        "base_url": "http://{host}:{port}",
        "index_path": str(tmp_path / "held.sqlite"),
        "refresh_interval": 0,
        "page_size": 3,
        "records_page_size": 3,
        "builtin_plugins": [],
        "plugin_workers": 1,
        "plugin_timeout": 90,
        "plugin": [{"label": "slow", "command": site.command}],
    }
    return start_wsgi("tests.apps:held_provider", settings, ready_path="/oai?verb=Identify")


def harvest(url: str, out: Path, **flags: object) -> dict[str, Any]:
    settings = load_settings(site_url=url, out=out, quiet=True, environ={}, **flags)
    summary = build_harvest(settings).run()
    assert summary.exit_code == 0, summary.errors
    return summary.as_dict()


def archived(out: Path) -> set[str]:
    """The names of the files the collection holds a response for."""
    return {
        headers["WARC-Target-URI"].rpartition("/")[2]
        for kind, headers, _ in listed_records(out)
        if kind == "response" and "/oai" not in headers["WARC-Target-URI"]
    }


@pytest.mark.parametrize("passes", [3, 0], ids=["default", "no-catch-up"])
def test_a_harvest_made_while_records_are_restamped_ends_complete(
    site: Site, tmp_path: Path, passes: int
) -> None:
    out = tmp_path / "out"
    flags = {} if passes == 3 else {"catch_up_passes": passes}  # 3: the default
    with held(site, tmp_path) as server:
        summary = harvest(server.url, out, **flags)
        if passes == 0:  # the pages after the first left out the restamped records
            assert archived(out) < set(FILES)
            return
        assert archived(out) == set(FILES)
        assert site.done() == dict.fromkeys(FILES, 1)
        # the next run: nothing changed since, nothing to fetch
        again = harvest(server.url, out)
    assert summary["fetched"] == len(FILES)
    # (it lists again what changed in its bound's second: the incremental overlap)
    assert again["fetched"] == again["unchanged"] == again["failed"] == 0, again


def test_a_didl_harvest_made_while_records_are_restamped_archives_their_analyses(
    site: Site, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with held(site, tmp_path) as server:
        harvest(server.url, out, oai_strategy="didl")
    latest: dict[str, etree._Element] = {}
    for kind, headers, content in listed_records(out):
        if kind in ("response", "revisit") and "verb=ListRecords" in headers["WARC-Target-URI"]:
            for didl in etree.fromstring(content).iterfind(".//didl:DIDL", NS):
                url = didl.findtext(".//dii:Identifier", namespaces=NS) or ""
                latest[url.rpartition("/")[2]] = didl  # a later page's record is newer
    assert set(latest) == set(FILES)
    for name, data in FILES.items():
        found = latest[name].find(".//pres:analysis[@label='slow']", NS)
        assert found is not None, name
        assert f"seen {len(data)}" in "".join(found.itertext())


def test_a_killed_provider_resumes_the_analyses_and_analyses_a_version_once(
    site: Site,
) -> None:
    with site.serve() as server:
        assert set(datestamps(server.url)) == set(FILES)
        poll(lambda: site.started() or None, 30, "the plugin's first run")
        server.process.kill()  # the master; its worker follows it
        server.process.wait(10)
    assert site.analysed() == {}
    site.gate.write_text("open")  # the killed run's plugin sees its parent gone: no result
    restarted = poll(lambda: _start_when_unlocked(site), 30, "a restart once the worker is gone")
    with restarted as server:
        for name in FILES:
            poll(lambda name=name: analysis(server, name), 120, f"{name}'s analysis")
    assert site.analysed() == {"slow": len(FILES)}
    assert site.done() == dict.fromkeys(FILES, 1)
    # one file changes: the next start analyses it, and it alone
    (site.root / "page0.txt").write_bytes(b"page 0, changed\n")
    with site.serve() as server:
        poll(lambda: site.done().get("page0.txt") == 2 or None, 60, "page0.txt analysed again")
        poll(lambda: analysis(server, "page0.txt"), 60, "page0.txt's new analysis")
    assert site.done() == {**dict.fromkeys(FILES, 1), "page0.txt": 2}


def _start_when_unlocked(site: Site) -> RunningServer | None:
    try:
        return site.serve()
    except RuntimeError:  # refused: the killed master's worker still holds the index
        return None
