"""gzip and deflate of a response made of parts, a kept part deflated once
(server_module.lists.contentcoding), and what clients decode of them over loopback."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest
import requests
from lxml import etree
from sickle import Sickle

from server_module.lists.contentcoding import Kept, coded
from tests.conftest import OAI, start_provider
from tests.schemas import assert_valid
from tests.sites import make_site

ITEMS = "".join(f"<header><identifier>http://e.org/{i}</identifier></header>" for i in range(999))
LAYOUTS = {
    "kept in the middle": [b"<head>", Kept(ITEMS.encode()), b"<tail/>"],
    "kept first": [Kept(ITEMS.encode()), b"<tail/>"],
    "kept last": [b"<head>", Kept(ITEMS.encode())],
    "kept alone": [Kept(ITEMS.encode())],
    "two kept, empty parts": [b"", Kept(b"a" * 70_000), b"", Kept("\u00e9t\u00e9".encode()), b""],
    "no kept part": [b"<head>", ITEMS.encode(), b"<tail/>"],
    "nothing": [],
}


@pytest.mark.parametrize("parts", LAYOUTS.values(), ids=list(LAYOUTS))
def test_each_coding_decodes_to_the_parts_joined(parts: list[bytes]) -> None:
    whole = b"".join(parts)
    assert coded(parts, "identity") == whole
    assert gzip.decompress(coded(parts, "gzip")) == whole
    assert zlib.decompress(coded(parts, "deflate")) == whole  # zlib format, as RFC 9110 says
    assert zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(coded(parts, "gzip")) == whole


def test_a_kept_part_is_deflated_once_for_every_response_that_carries_it() -> None:
    kept = Kept(ITEMS.encode())
    first = coded([b"<a>", kept, b"</a>"], "gzip")
    deflated = kept.deflated()
    second = coded([b"<b>", kept, b"</b>"], "deflate")
    assert kept.deflated() is deflated
    assert deflated in first and deflated in second, "spliced, not compressed again"
    assert len(first) < len(ITEMS) // 10


def test_an_unknown_coding_is_refused() -> None:
    with pytest.raises(ValueError, match="br"):
        coded([b"x"], "br")


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_served_first_page_decodes_to_the_identity_page(tmp_path: Path, encoding: str) -> None:
    site = make_site(tmp_path / "www", pages=40)
    params = {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"}
    with start_provider(site.root, tmp_path / "idx.sqlite", page_size=9) as server:
        url = server.url + "/oai"
        plain = requests.get(
            url, params=params, headers={"Accept-Encoding": "identity"}, timeout=30
        )
        pages = [
            requests.get(url, params=params, headers={"Accept-Encoding": encoding}, timeout=30)
            for _ in range(2)  # the second from the kept first page
        ]
        by_sickle = Sickle(url).harvest(**params)  # requests' own Accept-Encoding: gzip, deflate
    total = len(site.public)
    expected = _items(plain.content, total)
    assert "Content-Encoding" not in plain.headers and len(expected) == 9
    for page in pages:
        assert page.headers["Content-Encoding"] == encoding
        assert _items(page.content, total) == expected
    assert by_sickle.http_response.headers["Content-Encoding"] == "gzip"
    assert _items(by_sickle.http_response.content, total) == expected


def _items(body: bytes, total: int) -> list[str]:
    root = assert_valid(body)
    token = root.find(f".//{OAI}resumptionToken")
    assert token is not None and token.get("completeListSize") == str(total)
    return [etree.tostring(h).decode() for h in root.iter(f"{OAI}header")]
