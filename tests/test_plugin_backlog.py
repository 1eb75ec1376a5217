"""A slow plugin never holds the listing back: ``oai-provider serve`` (a real process, as an
owner starts it) lists every file within seconds while its plugin still runs; once the
analyses are done each record's datestamp has moved and its DIDL carries them; a provider
killed mid-way resumes the missing analyses at its next start.

The plugin is a small script that waits for a gate file the test opens, so "slow" is as slow
as the test wants, whatever the machine's load.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from lxml import etree
from sickle import Sickle

from tests.servers import RunningServer, start_command

CLI = [sys.executable, "-m", "server_module.cli"]
BASE = "http://example.org"
FILES = {f"page{i}.txt": f"page {i}\n".encode() for i in range(6)}
LISTED_WITHIN_S = 15.0  # from the process's start to a complete listing (a loaded machine)
GATE_WAIT_S = 60.0  # the plugin's own bound on its wait; the settings give it 90
NS = {
    "oai": "http://www.openarchives.org/OAI/2.0/",
    "pres": "urn:coop-archive:preservation:1.0",
}
SLOW = f"""\
import os, sys, time
deadline = time.monotonic() + {GATE_WAIT_S}
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
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
        time.sleep(0.2)
    raise AssertionError(f"{message} within {seconds} s")


class Site:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "www"
        self.root.mkdir()
        for name, data in FILES.items():
            (self.root / name).write_bytes(data)
        self.gate = tmp_path / "gate"
        self.index = tmp_path / "index.sqlite"
        script = tmp_path / "slow.py"
        script.write_text(SLOW)
        self.config = tmp_path / "provider.toml"
        self.config.write_text(
            "builtin_plugins = []\n"
            "plugin_workers = 1\n"
            "plugin_timeout = 90\n"
            "[[plugin]]\n"
            'label = "slow"\n'
            f'command = ["{sys.executable}", "{script}", "{self.gate}", "%s"]\n'
        )

    def serve(self) -> RunningServer:
        argv = [
            *CLI,
            "serve",
            str(self.root),
            "--config",
            str(self.config),
            "--index",
            str(self.index),
            "--base-url",
            BASE,
            "--port",
            "{port}",
            "--workers",
            "1",
        ]
        return start_command(argv, ready_path="/oai?verb=Identify", timeout=LISTED_WITHIN_S)

    def open_gate(self) -> None:
        self.gate.write_text("open")

    def analysed(self) -> dict[str, int]:
        """Results in the index, per plugin label."""
        with sqlite3.connect(self.index) as conn:
            rows = conn.execute("SELECT label, count(*) FROM analyses GROUP BY label")
            return dict(rows.fetchall())


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


def datestamps(server: RunningServer, **args: str) -> dict[str, str]:
    headers = Sickle(server.url + "/oai").ListIdentifiers(metadataPrefix="oai_didl", **args)
    return {h.identifier.removeprefix(BASE + "/"): h.datestamp for h in headers}


def analysis(server: RunningServer, name: str) -> tuple[str, str] | None:
    """The record's datestamp and its ``slow`` analysis's text, once it has one."""
    record = Sickle(server.url + "/oai").GetRecord(
        identifier=f"{BASE}/{name}", metadataPrefix="oai_didl"
    )
    root = etree.fromstring(record.raw.encode())
    found = root.find(".//pres:analysis[@label='slow']", NS)
    if found is None:
        return None
    return root.findtext(".//oai:header/oai:datestamp", namespaces=NS) or "", "".join(
        found.itertext()
    )


def test_a_slow_plugin_does_not_hold_the_listing_back_and_its_results_restamp_the_records(
    site: Site,
) -> None:
    started = time.monotonic()
    with site.serve() as server:
        listed = datestamps(server)
        assert time.monotonic() - started < LISTED_WITHIN_S
        assert set(listed) == set(FILES)
        assert site.analysed() == {}  # the plugin is still waiting at its gate
        first = max(listed.values())
        poll(  # so that the analyses' second is a later one
            lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > first or None,
            5,
            "the clock passed the listing's second",
        )
        site.open_gate()
        stamps = {}
        for name, data in FILES.items():
            stamp, text = poll(lambda name=name: analysis(server, name), 120, f"{name}'s analysis")
            assert stamp > listed[name]  # its record changed: a new datestamp
            assert f"seen {len(data)}" in text
            stamps[name] = stamp
        # an incremental harvest from the analyses' first second lists every record again
        assert set(datestamps(server, **{"from": min(stamps.values())})) == set(FILES)
    # only the plugin the settings name: `builtin_plugins = []` holds in serve's workers too
    assert site.analysed() == {"slow": len(FILES)}


def test_a_killed_provider_resumes_the_missing_analyses_at_its_next_start(site: Site) -> None:
    with site.serve() as server:
        assert set(datestamps(server)) == set(FILES)
        server.process.kill()  # the master; its worker follows it
        server.process.wait(10)
    assert site.analysed() == {}
    site.open_gate()  # the killed plugin's child ends; the next start's pass runs freely
    restarted = poll(
        lambda: _start_when_unlocked(site), 30, "a restart once the killed worker is gone"
    )
    with restarted as server:
        for name, data in FILES.items():
            _, text = poll(lambda name=name: analysis(server, name), 120, f"{name}'s analysis")
            assert f"seen {len(data)}" in text
    assert site.analysed() == {"slow": len(FILES)}  # each once


def _start_when_unlocked(site: Site) -> RunningServer | None:
    try:
        return site.serve()
    except RuntimeError:  # refused: the killed master's worker still holds the index
        return None
