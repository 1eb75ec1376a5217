"""A site nginx serves alone, with ResourceSync documents from ``oai-provider resourcesync``
and no OAI-PMH endpoint: ``harvester harvest URL`` in auto mode finds the source, archives
every listed file (unlinked ones too) with its DIDL record, and later follows the Change
Lists, fetching only what changed and noting deletions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from bench.crawl import serving
from server_module.cli import main as provider_main
from tests.sites import Manifest, make_site
from tests.test_harvest import listed_records, records

BIN = Path(sys.executable).parent
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def url_of(base: str, rel: str) -> str:
    from urllib.parse import quote

    return f"{base}/{quote(os.fsencode(rel), safe='/')}"


def publish(site: Manifest, base: str, state: Path) -> None:
    argv = ["resourcesync", str(site.root), "--base-url", base, "--state", str(state)]
    assert provider_main(argv) == 0


def harvest(base: str, out: Path) -> dict[str, object]:
    done = subprocess.run(
        [str(BIN / "harvester"), "harvest", base, "--out", str(out), "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


@pytest.fixture()
def static_site(tmp_path: Path) -> Iterator[tuple[Manifest, str, Path]]:
    site = make_site(tmp_path / "www", pages=30, seed=9)
    with serving(site.root, tmp_path / "nginx") as base:
        state = tmp_path / "rs-state"
        publish(site, base, state)
        yield site, base, state


def test_auto_mode_harvests_a_static_source_then_its_changes(
    static_site: tuple[Manifest, str, Path], tmp_path: Path
) -> None:
    site, base, state = static_site
    assert not (site.root / "oai").exists()
    out = tmp_path / "out"
    summary = first = harvest(base, out)
    assert summary["endpoint"] == f"{base}/capabilitylist.xml"
    recs = listed_records(out)
    responses = [h["WARC-Target-URI"] for t, h, _c in recs if t == "response"]
    expected = {url_of(base, p) for p in site.public}
    assert Counter(responses) == Counter(expected), "each listed file exactly once"
    assert site.unlinked and {url_of(base, p) for p in site.unlinked} <= set(responses)
    didls = [c for t, _h, c in recs if t == "metadata" and b"DIDL" in c]
    assert len(didls) == len(expected)
    assert all(b"<pres:strategy>resourcesync</pres:strategy>" in c for c in didls)
    assert summary["failed"] == 0

    time.sleep(1.1)  # a new second for the changes' datetimes
    edited, gone = "docs/with space.html", "files/empty.txt"
    (site.root / edited).write_bytes(b"<html><title>edited</title></html>")
    (site.root / gone).unlink()
    (site.root / "unlinked-new.txt").write_text("no page links here\n")
    publish(site, base, state)
    before = len(recs)
    summary = harvest(base, out)
    new = listed_records(out)[before:]
    fetched = [h["WARC-Target-URI"] for t, h, _c in new if t == "response"]
    assert sorted(fetched) == sorted([url_of(base, edited), url_of(base, "unlinked-new.txt")])
    notes = [c for t, _h, c in new if t == "metadata" and b"deletion" in c]
    assert len(notes) == 1 and url_of(base, gone).encode() in notes[0]
    assert (summary["fetched"], summary["deleted"]) == (2, 1)

    again = harvest(base, out)  # the last second's changes are read again, not fetched again
    assert (again["fetched"], again["unchanged"], again["deleted"]) == (0, 0, 0)
    # the start URL, which no list names, by each run: new, then unchanged (issue 32, item 4)
    assert [s["seed"] for s in (first, summary, again)] == ["fetched", "unchanged", "unchanged"]
    home = [t for t, h, _c in records(out) if h.get("WARC-Target-URI") == base + "/"]
    assert [t for t in home if t != "request"] == ["response", "revisit", "revisit"]


def test_each_run_adds_a_change_list_and_big_lists_split(
    static_site: tuple[Manifest, str, Path], tmp_path: Path
) -> None:
    from server_module.resourcesync.static import publish_static

    site, base, state = static_site
    assert not (site.root / "changelist-00001.xml").exists()
    for round_ in range(2):
        time.sleep(1.1)
        (site.root / f"new{round_}.txt").write_text(f"round {round_}\n")
        publish(site, base, state)
    index = etree.parse(str(site.root / "changelist.xml")).getroot()
    assert index.tag == f"{SM}sitemapindex"
    parts = [e.text for e in index.iter(f"{SM}loc")]
    assert parts == [f"{base}/changelist-00001.xml", f"{base}/changelist-00002.xml"]
    first = etree.parse(str(site.root / "changelist-00001.xml")).getroot()
    assert [e.text for e in first.iter(f"{SM}loc")] == [f"{base}/new0.txt"]

    other = make_site(tmp_path / "other", pages=30, seed=3)
    split = tmp_path / "split"
    publish_static(other.root, base, out=split, state=tmp_path / "split-state", max_entries=7)
    root = etree.parse(str(split / "resourcelist.xml")).getroot()
    assert root.tag == f"{SM}sitemapindex"
    listed: list[str] = []
    for loc in root.iter(f"{SM}loc"):
        part = etree.parse(str(split / str(loc.text).rsplit("/", 1)[1])).getroot()
        listed += [str(e.text) for e in part.iter(f"{SM}loc")]
    public = {url_of(base, p) for p in other.public}
    assert len(root.findall(f"{SM}sitemap")) == -(-len(public) // 7)
    assert sorted(listed) == sorted(public)


def test_a_hostile_source_description_is_one_line_naming_it(tmp_path: Path) -> None:
    """Entities are never expanded: a DOCTYPE is refused with one line naming the URL."""
    root = tmp_path / "hostile"
    (root / ".well-known").mkdir(parents=True)
    (root / "index.html").write_text("<p>hi</p>")
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&b;</loc></url>'
        "</urlset>"
    )
    (root / ".well-known" / "resourcesync").write_text(laughs)
    with serving(root, tmp_path / "nginx") as base:
        done = subprocess.run(
            [
                str(BIN / "harvester"),
                "harvest",
                base,
                "--out",
                str(tmp_path / "out"),
                "--mode",
                "resourcesync",
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    where = f"{base}/.well-known/resourcesync"
    assert done.stderr.strip().splitlines() == [
        f"harvester: no ResourceSync source description at {where}"
        f" ({where}: DOCTYPE declarations are refused)"
    ]
