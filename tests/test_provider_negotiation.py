"""What the endpoint answers depends on what the client asks for: the content coding by the
``Accept-Encoding`` quality values (RFC 9110 §12.5.3), and set names that read as MIME types."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

import pytest
import requests

from tests.conftest import NS, start_provider
from tests.schemas import assert_valid
from tests.servers import RunningServer
from tests.sites import make_site


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("negotiation")
    site = make_site(tmp / "www", pages=12, seed=5)
    (site.root / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>\n')
    with start_provider(site.root, tmp / "idx.sqlite", page_size=5) as server:
        yield server


def raw_get(server: RunningServer, headers: dict[str, str], **params: str) -> requests.Response:
    """The answer's bytes as sent (requests would decode the coding)."""
    response = requests.get(server.url + "/oai", params=params, headers=headers, stream=True)
    response.raw.decode_content = False
    response._content = response.raw.read()
    return response


CODED = {
    "deflate;q=1, gzip;q=0.5": "deflate",
    "gzip;q=0.5, deflate": "deflate",
    "gzip, deflate": "gzip",
    "gzip;q=0, deflate;q=0.1": "deflate",
    "gzip;q=0": None,
    "deflate;q=0, gzip;q=0": None,
    "identity, gzip;q=0.5": None,
    "*": "gzip",
    "*;q=0, deflate;q=0.2": "deflate",
    "br": None,
}


@pytest.mark.parametrize("field", list(CODED))
def test_the_coding_follows_the_quality_values(provider: RunningServer, field: str) -> None:
    answer = raw_get(provider, {"Accept-Encoding": field}, verb="Identify")
    coding = CODED[field]
    assert answer.headers.get("Content-Encoding") == coding
    decode = {None: bytes, "gzip": gzip.decompress, "deflate": zlib.decompress}[coding]
    assert_valid(decode(answer.content))


def test_a_set_name_writes_the_mime_type_not_the_set_spec(provider: RunningServer) -> None:
    answer = raw_get(provider, {"Accept-Encoding": "identity"}, verb="ListSets")
    root = assert_valid(answer.content)
    names = dict(
        zip(
            root.xpath("//oai:set/oai:setSpec/text()", namespaces=NS),
            root.xpath("//oai:set/oai:setName/text()", namespaces=NS),
            strict=True,
        )
    )
    assert names["image:svg~xml"] == "Files of MIME type image/svg+xml"
    assert names["image"] == "Files of MIME type image/*"
    assert not [name for name in names.values() if "~" in name]
