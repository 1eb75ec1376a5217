"""A symlink is served only while its target passes the scan's public-path rules (issue 12, #6).

The index is refreshed at start-up only (``refresh_interval=0``), so every swap below happens
under a running provider that still lists the link as the public file it was.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.conftest import OAI, OAIClient, start_provider
from tests.servers import RunningServer

PUBLIC = b"<title>public page</title>" + b"p" * 200
HIDDEN = b"<title>hidden</title>never serve me" + b"h" * 200
DIDL = "{urn:mpeg:mpeg21:2002:02-DIDL-NS}"


def swap(link: Path, target: str) -> None:
    """Retarget ``link`` atomically (a new link renamed over it), as a deploy script would."""
    fresh = link.with_name(link.name + ".swap")
    fresh.symlink_to(target)
    os.replace(fresh, link)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "www"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "page.html").write_bytes(PUBLIC)
    (root / "docs" / "link.html").symlink_to("page.html")
    (root / ".private").mkdir()
    (root / ".private" / "secret.html").write_bytes(HIDDEN)
    (root / "docs" / "draft.html~").write_bytes(HIDDEN)  # excluded by the default patterns
    (tmp_path / "outside.html").write_bytes(HIDDEN)
    return root


@pytest.fixture
def provider(site: Path, tmp_path: Path) -> Iterator[RunningServer]:
    with start_provider(site, tmp_path / "index.sqlite") as server:
        yield server


TARGETS = ["../.private/secret.html", "draft.html~", "../../outside.html"]


@pytest.mark.parametrize("target", TARGETS)
def test_the_file_route_refuses_a_link_swapped_to_a_non_public_target(
    site: Path, provider: RunningServer, target: str
) -> None:
    url = provider.url + "/docs/link.html"
    before = requests.get(url, timeout=10)
    assert (before.status_code, before.content) == (200, PUBLIC)
    swap(site / "docs" / "link.html", target)
    assert (site / "docs" / "link.html").read_bytes() == HIDDEN
    after = requests.get(url, timeout=10)
    assert after.status_code == 404
    assert b"never serve me" not in after.content


def _inline(oai: OAIClient, provider: RunningServer, relpath: str) -> bytes | None:
    """The bytes GetRecord's oai_didl carries by value for ``relpath``, or None."""
    root = oai.get(
        verb="GetRecord", identifier=f"{provider.url}/{relpath}", metadataPrefix="oai_didl"
    )
    record = root.find(f"{OAI}GetRecord/{OAI}record")
    assert record is not None
    inline = record.find(f".//{DIDL}Resource[@encoding='base64']")
    return None if inline is None else base64.b64decode(inline.text or "")


@pytest.mark.parametrize("target", TARGETS)
def test_get_record_carries_no_bytes_of_a_non_public_target(
    site: Path, provider: RunningServer, target: str
) -> None:
    oai = OAIClient(provider)
    assert _inline(oai, provider, "docs/link.html") == PUBLIC
    # The same bytes as the indexed version, so the digest check alone cannot refuse them:
    # only the target's path can.
    for path in (site / ".private" / "secret.html", site / "docs" / "draft.html~"):
        path.write_bytes(PUBLIC)
    (site.parent / "outside.html").write_bytes(PUBLIC)
    swap(site / "docs" / "link.html", target)
    assert _inline(oai, provider, "docs/link.html") is None


def test_a_link_swapped_to_another_public_file_is_still_served(
    site: Path, provider: RunningServer
) -> None:
    (site / "docs" / "other.html").write_bytes(b"other")
    swap(site / "docs" / "link.html", "other.html")
    resp = requests.get(provider.url + "/docs/link.html", timeout=10)
    assert (resp.status_code, resp.content) == (200, b"other")


def test_a_folder_swapped_for_a_link_to_a_hidden_folder_is_refused(
    site: Path, provider: RunningServer
) -> None:
    """A folder component swapped, not only the last one."""
    (site / "docs" / "link.html").unlink()
    os.rename(site / "docs", site / "old-docs")
    (site / ".private" / "page.html").write_bytes(HIDDEN)
    (site / "docs").symlink_to(".private")
    resp = requests.get(provider.url + "/docs/page.html", timeout=10)
    assert resp.status_code == 404
    assert b"never serve me" not in resp.content
