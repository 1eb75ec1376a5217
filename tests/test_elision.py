"""Elision of the bytes a list page carries, and their rebuilding (sans-IO)."""

from __future__ import annotations

import base64

import pytest

from harvester.listed.elision import Carried, Elision, digest, elide, rebuild

ONE, TWO = b"first file's bytes\n", b"\x00\xffsecond, binary"
ENC1, ENC2 = base64.b64encode(ONE), base64.b64encode(TWO)
RECORDS = {"<urn:uuid:1>": ONE, "<urn:uuid:2>": TWO}


def page(*resources: bytes) -> bytes:
    inner = b"".join(
        b'<didl:Resource encoding="base64">' + r + b"</didl:Resource>" for r in resources
    )
    return b"<?xml version='1.0'?><ListRecords>" + inner + b"</ListRecords>"


def carried(*pairs: tuple[bytes, bytes, str]) -> list[Carried]:
    return [Carried(encoded, body, rid, digest(body)) for encoded, body, rid in pairs]


def test_each_carried_text_becomes_a_reference_and_comes_back_exactly() -> None:
    payload = page(ENC1, ENC2)
    elided, elisions = elide(
        payload, carried((ENC1, ONE, "<urn:uuid:1>"), (ENC2, TWO, "<urn:uuid:2>"))
    )
    assert ENC1 not in elided and ENC2 not in elided
    assert elided == page(b"urn:uuid:1", b"urn:uuid:2")
    assert [Elision.parse(e.field()) for e in elisions] == elisions
    assert rebuild(elided, elisions, RECORDS.__getitem__) == payload


def test_text_that_is_not_the_canonical_encoding_stays_as_received() -> None:
    odd = ENC1[:-3] + b"h=="  # the same bytes once decoded ("Cg==" is "\n"), other spare bits
    assert base64.b64decode(odd) == ONE and odd != ENC1
    by_reference = b"&#81;" + ENC2[1:]  # a character reference: the parsed text differs
    payload = page(odd, by_reference)
    elided, elisions = elide(
        payload, carried((odd, ONE, "<urn:uuid:1>"), (ENC2, TWO, "<urn:uuid:2>"))
    )
    assert (elided, elisions) == (payload, [])


def test_only_whole_element_text_is_elided() -> None:
    payload = b"<a>x" + ENC1 + b"</a>" + page(ENC1)  # the same text inside other text first
    elided, elisions = elide(payload, carried((ENC1, ONE, "<urn:uuid:1>")))
    assert elided == b"<a>x" + ENC1 + b"</a>" + page(b"urn:uuid:1")
    assert rebuild(elided, elisions, RECORDS.__getitem__) == payload


def test_a_record_with_other_bytes_or_a_moved_reference_fails_the_rebuild() -> None:
    elided, elisions = elide(page(ENC1), carried((ENC1, ONE, "<urn:uuid:1>")))
    with pytest.raises(ValueError, match="other bytes"):
        rebuild(elided, elisions, lambda _rid: ONE + b"!")
    with pytest.raises(ValueError, match="no reference"):
        rebuild(b" " + elided, elisions, RECORDS.__getitem__)
