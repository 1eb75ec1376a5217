"""The provider's browser view in a real browser: Debian's ``chromium``, headless, opens the
endpoint and gets an HTML page the server made (content negotiation on ``Accept``); the
rendered DOM must be an HTML page linking every listed URL and the next page, not the raw
XML, and no XSLT is left for the browser to apply."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from urllib.parse import urljoin

import requests
from lxml import etree, html
from sickle import Sickle

from tests.conftest import NS, start_provider
from tests.schemas import assert_valid
from tests.sites import make_site

CHROMIUM = shutil.which("chromium") or "chromium"  # `make sysdeps` installs it


def rendered_dom(url: str, profile: Path) -> str:
    """The DOM chromium builds for ``url``, serialised (``--dump-dom``)."""
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",  # tests may run as root, where the sandbox refuses to start
            "--disable-gpu",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_list_page_renders_as_html_with_links(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=12, seed=3)
    with start_provider(site.root, tmp_path / "index.sqlite", page_size=5) as server:
        url = server.url + "/oai?verb=ListIdentifiers&metadataPrefix=oai_dc"
        raw = etree.fromstring(requests.get(url, timeout=30).content)
        dom = rendered_dom(url, tmp_path / "profile")
    listed = raw.xpath("//oai:header/oai:identifier/text()", namespaces=NS)
    token = raw.xpath("//oai:resumptionToken/text()", namespaces=NS)[0]
    assert len(listed) == 5 and token

    page = html.fromstring(dom)
    assert page.tag == "html" and page.find(".//body/table") is not None
    assert page.findtext(".//h1") == "OAI-PMH: ListIdentifiers"
    links = [a.get("href") for a in page.iter("a")]
    assert all(identifier in links for identifier in listed)
    # the token holds the moment it was made: the browser's request got its own
    (next_page,) = [h for h in links if h.startswith("?verb=ListIdentifiers&resumptionToken=")]
    assert len(next_page) == len(f"?verb=ListIdentifiers&resumptionToken={token}")
    assert not page.xpath("//*[local-name()='OAI-PMH']")


BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_a_browser_gets_a_page_made_by_the_server_and_clients_the_xml(tmp_path: Path) -> None:
    """Content negotiation: the Accept field a browser sends gets HTML, with no XSLT left for
    the browser to apply (Chromium 156 covers such a page with a removal banner); an OAI-PMH
    client's gets the XML, schema-valid, as before."""
    site = make_site(tmp_path / "www", pages=12, seed=3)
    with start_provider(site.root, tmp_path / "index.sqlite", page_size=5) as server:
        url = server.url + "/oai?verb=ListIdentifiers&metadataPrefix=oai_dc"
        page = requests.get(url, headers={"Accept": BROWSER_ACCEPT}, timeout=30)
        answers = [requests.get(url, headers={"Accept": a}, timeout=30) for a in CLIENT_ACCEPTS]
        dom = rendered_dom(url, tmp_path / "profile")
    assert page.headers["Content-Type"] == "text/html; charset=UTF-8"
    assert "Accept" in page.headers["Vary"].split(", ")
    assert b"xml-stylesheet" not in page.content and b"<table>" in page.content
    for answer in answers:
        assert answer.headers["Content-Type"] == "text/xml; charset=UTF-8"
        assert "Accept" in answer.headers["Vary"].split(", ")
        assert_valid(answer.content)
    assert "xslt" not in dom.lower()
    assert html.fromstring(dom).findtext(".//h1") == "OAI-PMH: ListIdentifiers"


CLIENT_ACCEPTS = ["*/*", "text/xml", "application/xml", "text/html;q=0.5, text/xml", ""]


def test_a_list_is_browsed_page_by_page_and_each_record_opens(tmp_path: Path) -> None:
    """In headless Chromium: each page's rows link their file and record, and its next-page
    link leads through the whole list to its end."""
    site = make_site(tmp_path / "www", pages=12, seed=3)
    with start_provider(site.root, tmp_path / "index.sqlite", page_size=5) as server:
        endpoint = server.url + "/oai"
        expected = [h.identifier for h in Sickle(endpoint).ListIdentifiers(metadataPrefix="oai_dc")]
        seen: list[str] = []
        url: str | None = endpoint + "?verb=ListIdentifiers&metadataPrefix=oai_dc"
        records: list[str] = []
        for _ in range(len(expected)):  # bounded: a page shows at least one item
            if url is None:
                break
            page = html.fromstring(rendered_dom(url, tmp_path / "profile"))
            rows = page.xpath("//table//tr[td]")
            seen += [row.xpath("td[1]/a/@href")[0] for row in rows]
            records += [row.xpath("td[5]/a/@href")[0] for row in rows]
            following = page.xpath("//a[@rel='next']/@href")
            url = urljoin(url, following[0]) if following else None
        record_page = html.fromstring(rendered_dom(urljoin(endpoint, records[-1]), tmp_path / "p"))
    assert seen == expected and url is None
    assert len(expected) == len(site.public)
    assert record_page.findtext(".//h1") == "OAI-PMH: GetRecord"
    assert record_page.xpath("//table//tr[td]/td[1]/a/@href") == [expected[-1]]
