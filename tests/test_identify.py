"""The harvester's ``--identify``: resources archived without a provider get, in their DIDL
records, the format identification a provider's plugins give (libmagic, PRONOM through
fido), from the payload as archived; a child that hangs is cut at its limit."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from lxml import etree

from harvester.archive.formatid.identifier import Identifier
from harvester.run.assembly import build_harvest
from harvester.settings import load_settings
from tests.conftest import start_provider
from tests.formatcorpus import corpus, make_corpus
from tests.schemas import assert_valid
from tests.test_harvest import records

NS = {
    "didl": "urn:mpeg:mpeg21:2002:02-DIDL-NS",
    "dii": "urn:mpeg:mpeg21:2002:01-DII-NS",
    "pres": "urn:coop-archive:preservation:1.0",
    "premis": "http://www.loc.gov/premis/v3",
}


def crawled_didls(
    tmp_path: Path, mode: str = "crawl", **flags: object
) -> dict[str, etree._Element]:
    """Crawl a site of the format corpus (no OAI-PMH endpoint, no ResourceSync), or with
    ``mode="oai"`` harvest it from its provider; each file's DIDL record by name, validated."""
    root = tmp_path / "www"
    make_corpus(root)
    links = "".join(f'<a href="{name}">{name}</a>' for name in corpus())
    (root / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>")
    out = tmp_path / "out"
    endpoint = "/not-oai" if mode == "crawl" else "/oai"
    with start_provider(
        root, tmp_path / "index.sqlite", endpoint=endpoint, resourcesync=False
    ) as server:
        settings = load_settings(site_url=server.url, out=out, quiet=True, environ={}, **flags)
        summary = build_harvest(settings).run().as_dict()
    assert summary["mode"] == mode
    found = {}
    for kind, _headers, content in records(out):
        if kind == "metadata" and content.startswith(b"<?xml") and b"didl:DIDL" in content[:300]:
            didl = assert_valid(content)  # DIDL, its PREMIS object and the analyses
            url = didl.findtext(".//dii:Identifier", namespaces=NS) or ""
            found[url.rpartition("/")[2]] = didl
    return found


def puid(didl: etree._Element) -> str | None:
    return didl.findtext(".//premis:formatRegistryKey", namespaces=NS)


def run(didl: etree._Element, label: str) -> etree._Element:
    (found,) = didl.iterfind(f".//pres:analysis[@label='{label}']", NS)
    return found


def test_a_crawl_with_pronom_names_each_files_puid(tmp_path: Path) -> None:
    didls = crawled_didls(tmp_path, identify="pronom")
    for name, (_data, expected) in corpus().items():
        assert puid(didls[name]) == expected, name
    lies = didls["lies.pdf"]
    assert run(lies, "libmagic").text.startswith("image/png\n")
    assert run(lies, "pronom").get("tool") == "fido"


def test_by_default_a_crawl_has_libmagic_identify_each_payload(tmp_path: Path) -> None:
    didls = crawled_didls(tmp_path)
    lies = didls["lies.pdf"]
    assert run(lies, "libmagic").text.startswith("image/png\n")
    assert lies.find(".//pres:analysis[@label='pronom']", NS) is None
    names = [n.text for n in lies.iterfind(".//premis:formatName", NS)]
    assert names == ["image/png"]
    assert puid(didls["doc.pdf"]) is None  # PRONOM only with --identify pronom


def test_by_default_a_providers_files_are_left_to_its_plugins(tmp_path: Path) -> None:
    didls = crawled_didls(tmp_path, mode="oai")
    assert didls["doc.pdf"].find(".//premis:premis", NS) is None
    assert puid(crawled_didls(tmp_path / "b", mode="oai", identify="pronom")["doc.pdf"]) == "fmt/18"


def test_identify_off_adds_nothing(tmp_path: Path) -> None:
    didls = crawled_didls(tmp_path, identify="off")
    assert didls["doc.pdf"].find(".//premis:premis", NS) is None


def test_a_hanging_identification_is_cut_at_its_limit_and_the_next_one_starts_afresh() -> None:
    ident = Identifier(timeout=1.0)
    ident.command = [
        sys.executable,
        "-c",
        'import sys, time; print(\'{"magic": "m"}\', flush=True); time.sleep(600)',
    ]
    started = time.monotonic()
    runs = ident.identify(b"x", "http://h/a", "0" * 64, datetime.now(UTC))
    assert [r.status for r in runs] == ["timeout"]
    assert time.monotonic() - started < 15
    ident.command = Identifier().command  # a working child for the next payload
    (again,) = ident.identify(b"%PDF-1.4\n", "http://h/b", "0" * 64, datetime.now(UTC))
    assert again.status == "ok" and again.facts["mime"] == "application/pdf"
    ident.close()


@pytest.mark.parametrize("mode", ["magic", "pronom"])
def test_the_cost_per_resource_is_bounded(mode: str) -> None:
    """What `--identify`'s default rests on (see the module docstring of
    harvester/archive/formatid/identifier.py): libmagic about a millisecond a resource."""
    ident = Identifier(pronom=mode == "pronom")
    page = corpus()["page.html"][0] * 50
    ident.identify(page, "http://h/x.html", "0" * 64, datetime.now(UTC))  # the child starts
    started = time.monotonic()
    for _ in range(50):
        ident.identify(page, "http://h/x.html", "0" * 64, datetime.now(UTC))
    per = (time.monotonic() - started) / 50
    ident.close()
    assert per < (0.05 if mode == "magic" else 0.5)  # generous: a loaded 2-core machine
