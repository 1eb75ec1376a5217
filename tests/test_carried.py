"""A file an ``oai_didl`` record carries by value: taken only when its base64 is valid and its
bytes match the record's SHA-256 (harvester/carried.py)."""

from __future__ import annotations

import base64
import hashlib
import logging

import pytest
from lxml import etree

from harvester.archive.didl import DIDL_NS, PRES_NS
from harvester.carried import carried_resource

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
    with caplog.at_level(logging.WARNING, logger="harvester.carried"):
        assert carried_resource(didl(encoded)) is None
    assert "undecodable base64" in caplog.text


def test_bytes_that_do_not_match_the_sha256_are_fetched_by_reference(
    caplog: pytest.LogCaptureFixture,
) -> None:
    encoded = base64.b64encode(BODY).decode()
    with caplog.at_level(logging.WARNING, logger="harvester.carried"):
        assert carried_resource(didl(encoded, hashlib.sha256(b"other").hexdigest())) is None
    assert "do not match its digest" in caplog.text
