"""A file an ``oai_didl`` record carries by value: taken only when its base64 is valid and its
bytes match the record's SHA-256 (harvester/listed/carried.py)."""

from __future__ import annotations

import base64
import hashlib
import logging
from pathlib import Path

import pytest
from lxml import etree

from harvester.archive.didl import DIDL_NS, PRES_NS
from harvester.listed.carried import carried_page, carried_resource
from harvester.oai.client import OAIClient
from server_module.index.fileindex import FileIndex
from tests.conftest import start_provider

BODY = bytes(range(256)) * 5 + b"end"


def didl(encoded: str, sha256: str | None = None) -> etree._Element:
    digest = "" if sha256 is None else f'<pres:digest algorithm="sha256">{sha256}</pres:digest>'
    return etree.fromstring(
        f'<didl:DIDL xmlns:didl="{DIDL_NS}" xmlns:pres="{PRES_NS}"><didl:Item>'
        f"<didl:Descriptor><didl:Statement><pres:digests>{digest}</pres:digests>"
        "</didl:Statement></didl:Descriptor><didl:Component>"
        '<didl:Resource mimeType="text/plain" ref="http://h/a"/>'
        f'<didl:Resource mimeType="text/plain" encoding="base64">{encoded}</didl:Resource>'
        "</didl:Component></didl:Item></didl:DIDL>"
    )


def test_a_carried_file_comes_with_its_base64_text_and_sha256() -> None:
    encoded = base64.b64encode(BODY).decode()
    got = carried_resource(didl(encoded, hashlib.sha256(BODY).hexdigest()))
    assert got is not None
    assert (got.body, got.encoded, got.mime) == (BODY, encoded.encode(), "text/plain")
    assert got.ready is not None and got.ready.payload.sha256 == hashlib.sha256(BODY).hexdigest()
    assert carried_resource(didl("")) is not None  # an empty file


@pytest.mark.parametrize(
    "encoded",
    [
        base64.b64encode(BODY).decode()[:-1] + "!",  # not in the alphabet
        base64.b64encode(BODY).decode()[:-2],  # padding missing
        "QQ==QQ==",  # padding inside
        "QQ== ",  # white space
        "QQ\n==",  # a line break
        "Q===",  # too much padding
        "QQ\xe9=",  # not ASCII
    ],
)
def test_base64_that_is_not_valid_is_fetched_by_reference(
    encoded: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="harvester.listed.carried"):
        assert carried_resource(didl(encoded)) is None
    assert "undecodable base64" in caplog.text


def test_bytes_that_do_not_match_the_sha256_are_fetched_by_reference(
    caplog: pytest.LogCaptureFixture,
) -> None:
    encoded = base64.b64encode(BODY).decode()
    with caplog.at_level(logging.WARNING, logger="harvester.listed.carried"):
        assert carried_resource(didl(encoded, hashlib.sha256(b"other").hexdigest())) is None
    assert "do not match its digest" in caplog.text


def test_a_page_sums_the_sizes_it_declares_for_the_files_it_does_not_carry(
    tmp_path: Path,
) -> None:
    """What the fetch step is told is due after the list: the Content-Length of every file
    above the provider's ``inline_max``, as each DIDL's ``http_header`` declares it; nothing
    for a carried file or a deletion."""
    root = tmp_path / "www"
    root.mkdir()
    sizes = {"a.txt": 100, "b.bin": 5_000, "c.bin": 7_000, "d.txt": 300, "gone.bin": 9_000}
    for name, size in sizes.items():
        (root / name).write_bytes(b"x" * size)
    index = tmp_path / "index.sqlite"
    with start_provider(root, index, inline_max=1_000, records_page_size=2) as server:
        (root / "gone.bin").unlink()
        with FileIndex(index, root, server.url) as files:
            files.refresh()
        with OAIClient(server.url + "/oai") as oai:
            pages = [carried_page(raw) for raw in oai.list_records_raw(metadata_prefix="oai_didl")]
    assert len(pages) == 3
    assert sum(p.referenced_bytes for p in pages) == 5_000 + 7_000
    for page in pages:
        referenced = [
            sizes[r.header.identifier.rsplit("/", 1)[1]]
            for r, c in zip(page.raw.records, page.carried, strict=True)
            if c is None and not r.header.deleted
        ]
        assert page.referenced_bytes == sum(referenced)
