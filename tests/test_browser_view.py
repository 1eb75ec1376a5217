"""The provider's browser view in a real browser: Debian's ``chromium``, headless, applies the
provider's XSLT stylesheet to a ListIdentifiers page; the rendered DOM must be an HTML page
linking every listed URL and the next page, not the raw XML."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import requests
from lxml import etree, html

from tests.conftest import NS, start_provider
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
