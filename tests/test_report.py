"""``harvester report``: one offline HTML page of a real crawl's collection, its plots inline
and its numbers those of the collection, as warcio and the state count them."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import html
from warcio.archiveiterator import ArchiveIterator

from coop_common.exitcode import ExitCode
from harvester.cli import main
from harvester.collection.reportfigures import human_bytes
from server_module.index.fileindex import FileIndex
from tests.harvested import Harvested, harvested

XLINK = "{http://www.w3.org/1999/xlink}href"


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Harvested, Path]]:
    tmp = tmp_path_factory.mktemp("report")
    with harvested(tmp, crawl=True) as found:
        target = tmp / "report.html"
        assert main(["report", str(found.out), "--to", str(target)]) == ExitCode.OK
        yield found, target


def page_of(target: Path) -> html.HtmlElement:
    return html.fromstring(target.read_bytes())


def table(page: html.HtmlElement, name: str) -> list[list[str]]:
    """The cells of a table; a byte count's is its exact count (its title), not its text."""
    rows = page.get_element_by_id(f"table-{name}").findall("tr")[1:]
    return [[td.get("title") or td.text_content() for td in row.findall("td")] for row in rows]


def svg_text(page: html.HtmlElement, name: str) -> list[str]:
    figure = page.get_element_by_id(f"fig-{name}")
    return [t.text_content() for t in figure.xpath(".//*[local-name()='text']")]


def warc_records(out: Path) -> list[tuple[str, str, str, int]]:
    """(type, target URI, HTTP Content-Type, Content-Length) of every record."""
    found = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for r in ArchiveIterator(fh):
                mime = r.http_headers.get_header("Content-Type") if r.http_headers else ""
                uri = r.rec_headers.get_header("WARC-Target-URI") or ""
                size = int(r.rec_headers.get_header("Content-Length"))
                found.append((r.rec_type, uri, (mime or "").split(";")[0], size))
    return found


def fetch_times(out: Path) -> list[int]:
    """The ``fetchTimeMs`` of every crawled URL's metadata record."""
    times = []
    for path in sorted((out / "warcs").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for r in ArchiveIterator(fh):
                if r.content_type == "application/warc-fields":
                    for line in r.content_stream().read().decode().splitlines():
                        if line.startswith("fetchTimeMs: "):
                            times.append(int(line.split(": ")[1]))
    return times


def test_the_page_references_nothing_outside_itself(crawled: tuple[Harvested, Path]) -> None:
    page = page_of(crawled[1])
    assert not page.xpath("//script | //link | //img | //iframe | //object | //embed")
    for element in page.iter():
        for name in ("src", "href", XLINK, "{http://www.w3.org/2000/svg}href"):
            value = element.get(name)
            assert value is None or value.startswith("#"), (element.tag, value)
        assert "url(http" not in (element.get("style") or "")
    assert "@import" not in page.findtext(".//style")


def test_it_has_every_plot(crawled: tuple[Harvested, Path]) -> None:
    page = page_of(crawled[1])
    for name in ("over-time", "mime-count", "mime-bytes", "failures", "hosts", "share"):
        figure = page.get_element_by_id(f"fig-{name}")
        assert figure.xpath(".//*[local-name()='svg']//*[local-name()='path']"), name


def test_its_numbers_are_the_collections(crawled: tuple[Harvested, Path]) -> None:
    found, target = crawled
    page = page_of(target)
    records = warc_records(found.out)
    responses = [r for r in records if r[0] == "response"]
    summary = dict((k, v) for k, v in table(page, "summary"))
    assert int(summary["captures"]) == len(responses)
    assert int(summary["bytes"]) == sum(r[3] for r in responses)
    assert int(summary["failed"]) == 1
    mimes = Counter(r[2] for r in responses)
    assert {m: int(n) for m, n, _b in table(page, "mime")} == dict(mimes)
    assert table(page, "failures") == [["HTTP 404", "1"]]
    ((host, requests, _rate, median_ms),) = table(page, "hosts")
    assert host == found.url.removeprefix("http://")
    assert int(requests) == sum(1 for r in records if r[0] == "request")
    assert int(median_ms) == int(statistics.median(fetch_times(found.out)))
    # every discovered URL was archived but the one broken link (its 404 is kept for replay)
    archived = len({r[1] for r in responses}) - 1
    share = page.get_element_by_id("share-final").text_content()
    assert share == f"{100 * archived / (archived + 1):.1f} %"
    ((start, end, mode, *_counts),) = table(page, "runs")
    assert mode == "crawl" and end >= start


def test_byte_counts_and_axes_are_in_binary_units(crawled: tuple[Harvested, Path]) -> None:
    page = page_of(crawled[1])
    cells = page.get_element_by_id("table-summary").xpath(".//td[@title]")
    (bytes_cell,) = cells
    assert bytes_cell.text_content() == human_bytes(int(bytes_cell.get("title")))
    assert bytes_cell.text_content().endswith(" KiB")
    for name in ("over-time", "mime-bytes"):
        ticks = svg_text(page, name)
        assert any(t.endswith(("B", "B/s")) and "iB" in t for t in ticks), (name, ticks)
        assert not any("1e" in t or "×10" in t for t in ticks), (name, ticks)


def test_a_harvest_over_oai_pmh_has_no_crawl_plots(tmp_path: Path) -> None:
    with harvested(tmp_path) as found:
        target = tmp_path / "r.html"
        assert main(["report", str(found.out), "--to", str(target), "--json"]) == ExitCode.OK
        # an incremental run: one page changed, its own series over time
        time.sleep(1.1)  # datestamps have a granularity of seconds
        changed = found.site.root / "index.html"
        changed.write_text(changed.read_text(encoding="utf-8") + "<!-- v2 -->", "utf-8")
        with FileIndex(tmp_path / "index.sqlite", found.site.root, found.url) as index:
            index.refresh()
        rerun = ["harvest", found.url + "/", "--out", str(found.out), "--quiet"]
        assert main(rerun) == ExitCode.OK
        again = tmp_path / "r2.html"
        assert main(["report", str(found.out), "--to", str(again), "--json"]) == ExitCode.OK
    runs = table(page_of(again), "over-time")
    seeded = len(found.site.public) + 1  # the site's files and its root (harvester/listed/seed.py)
    assert len(runs) == 2 and int(runs[0][1]) == seeded
    assert 1 <= int(runs[1][1]) < len(found.site.public)
    figure = page_of(again).get_element_by_id("fig-over-time")
    assert figure.xpath(".//*[@id='run-0']") and figure.xpath(".//*[@id='run-1']")
    page = page_of(target)
    assert sum(int(n) for _m, n, _b in table(page, "mime")) == seeded
    assert "Not a crawl" in page.get_element_by_id("hosts").getnext().text_content()


def test_a_target_in_a_folder_that_does_not_exist_is_refused(
    crawled: tuple[Harvested, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found, _ = crawled
    target = tmp_path / "no" / "such" / "r.html"
    assert main(["report", str(found.out), "--to", str(target)]) == ExitCode.USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"harvester: --to {target}: no folder {target.parent}")
    assert not (tmp_path / "no").exists()
