"""Tests for harvester.archive.didl: every record is validated against the DIDL schema and,
statement by statement, against the project's http_header and preservation schemas."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from harvester.archive.didl import (
    DIDL_NS,
    DII_NS,
    HTTP_NS,
    PRES_NS,
    CaptureDescription,
    OaiHeaderInfo,
    Provenance,
    WarcPointer,
    capture_didl,
    deletion_didl,
    didl_filename,
    sniff_mime,
)
from tests.schemas import assert_valid

NS = {"didl": DIDL_NS, "dii": DII_NS, "http": HTTP_NS, "pres": PRES_NS}
DAY = timedelta(hours=23, minutes=59)  # the widest UTC offset timezone() takes
HARVESTED = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
DOC_ID = "urn:uuid:00000000-0000-4000-8000-000000000001"
RECORD_ID = "<urn:uuid:00000000-0000-4000-8000-0000000000aa>"
PAYLOAD = b"<!DOCTYPE html><html><body>hi</body></html>"
URL = "http://example.org/caf\u00e9/page?a=1&b=<2>#top"
XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def pointer(**changes: object) -> WarcPointer:
    base = WarcPointer(RECORD_ID, "harvest-20240501-00000-1.warc.gz", 1234, 567, "response")
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def provenance(**changes: object) -> Provenance:
    base = Provenance("coop-archive", "0.1.0", HARVESTED, "http://example.org/oai", "oai-get")
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def oai_header(**changes: object) -> OaiHeaderInfo:
    base = OaiHeaderInfo(
        "oai:example.org:page",
        "2024-04-30T08:00:00Z",
        ("pages", "pages:cafe"),
        "http://example.org/oai",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def description(**changes: object) -> CaptureDescription:
    base = CaptureDescription(
        url=URL,
        status=200,
        reason="OK",
        protocol="HTTP/1.1",
        headers=[
            ("Content-Type", "text/html; charset=utf-8"),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
        ],
        sha1=hashlib.sha1(PAYLOAD).hexdigest(),
        sha256=hashlib.sha256(PAYLOAD).hexdigest(),
        declared_mime="text/html; charset=utf-8",
        sniffed_mime="text/html",
        warc=pointer(),
        oai=oai_header(),
        provenance=provenance(),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def statements(document: bytes) -> list[etree._Element]:
    """Validate the document, then each statement's element on its own; return them."""
    root = assert_valid(document)
    found = []
    for statement in root.iterfind("didl:Item/didl:Descriptor/didl:Statement", NS):
        assert statement.get("mimeType") == "application/xml"
        (child,) = list(statement)  # exactly one element per statement
        if child.tag != f"{{{DII_NS}}}Identifier":  # DII has no schema to check against
            assert_valid(etree.fromstring(etree.tostring(child)))
        found.append(child)
    return found


def tags(elements: list[etree._Element]) -> list[str]:
    prefixes = {ns: prefix for prefix, ns in NS.items()}
    names = [etree.QName(e) for e in elements]
    return [f"{prefixes[name.namespace]}:{name.localname}" for name in names]


def only(elements: list[etree._Element], tag: str) -> etree._Element:
    (element,) = [e for e in elements if tags([e]) == [tag]]
    return element


# -- capture records -------------------------------------------------------------------


def test_capture_statements_come_in_order_then_the_resource() -> None:
    document = capture_didl(description(), document_id=DOC_ID)
    assert document.startswith(b"<?xml version='1.0' encoding='UTF-8'?>")
    assert tags(statements(document)) == [
        "dii:Identifier",
        "http:header",
        "pres:digests",
        "pres:mimeType",
        "pres:oaiHeader",
        "pres:warcRecord",
        "pres:provenance",
    ]
    root = etree.fromstring(document)
    assert root.get("DIDLDocumentId") == DOC_ID
    item = root.find("didl:Item", NS)
    assert [etree.QName(e).localname for e in item] == ["Descriptor"] * 7 + ["Component"]
    (resource,) = item.findall("didl:Component/didl:Resource", NS)
    assert resource.get("ref") == "urn:uuid:00000000-0000-4000-8000-0000000000aa"
    assert resource.get("mimeType") == "text/html; charset=utf-8"


def test_capture_without_oai_header_leaves_it_out() -> None:
    found = statements(capture_didl(description(oai=None)))
    assert "pres:oaiHeader" not in tags(found)
    assert tags(found)[-2:] == ["pres:warcRecord", "pres:provenance"]


def test_url_round_trips_exactly_in_the_identifier() -> None:
    found = statements(capture_didl(description()))
    assert only(found, "dii:Identifier").text == URL
    header_url = only(found, "http:header").get("url")
    assert header_url == "http://example.org/caf%C3%A9/page?a=1&b=%3C2%3E#top"
    assert unquote(header_url) == URL


def test_http_header_keeps_order_and_repeats_and_strips_control_characters() -> None:
    headers = [("X-Odd", "a\x00b\x1fc\x7f\td"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]
    found = statements(
        capture_didl(description(headers=headers, reason="Not\x08 Found", status=404))
    )
    header = only(found, "http:header")
    status = header.find("http:status", NS)
    assert (status.get("code"), status.get("protocol"), status.text) == (
        "404",
        "HTTP/1.1",
        "Not Found",
    )
    fields = [(f.get("name"), f.text) for f in header.iterfind("http:field", NS)]
    assert fields == [("X-Odd", "abc\x7f\td"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]


def test_status_protocol_left_out_when_unknown() -> None:
    found = statements(capture_didl(description(protocol="")))
    assert only(found, "http:header").find("http:status", NS).get("protocol") is None


def test_digests_are_sha1_then_sha256_in_lower_case_hex() -> None:
    found = statements(capture_didl(description()))
    digests = only(found, "pres:digests")
    assert [(d.get("algorithm"), d.text) for d in digests] == [
        ("sha1", hashlib.sha1(PAYLOAD).hexdigest()),
        ("sha256", hashlib.sha256(PAYLOAD).hexdigest()),
    ]


@pytest.mark.parametrize(
    "changes",
    [
        {"sha1": "A" * 40},
        {"sha1": "a" * 39},
        {"sha256": "sha256:" + "a" * 64},
        {"status": -1},
    ],
)
def test_bad_values_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        description(**changes)


def test_bad_pointer_and_strategy_are_refused() -> None:
    with pytest.raises(ValueError):
        pointer(offset=-1)
    with pytest.raises(ValueError):
        provenance(strategy="guess")


def test_mime_types_declared_and_sniffed() -> None:
    found = statements(capture_didl(description()))
    mime = only(found, "pres:mimeType")
    assert (mime.get("declared"), mime.get("sniffed")) == ("text/html; charset=utf-8", "text/html")


@pytest.mark.parametrize(
    ("declared", "sniffed", "resource_mime"),
    [
        ("image/png", None, "image/png"),
        (None, "image/gif", "image/gif"),
        ("  ", "image/gif", "image/gif"),
        (None, None, "application/octet-stream"),
    ],
)
def test_resource_mime_falls_back_from_declared_to_sniffed(
    declared: str | None, sniffed: str | None, resource_mime: str
) -> None:
    document = capture_didl(description(declared_mime=declared, sniffed_mime=sniffed))
    found = statements(document)
    mime = only(found, "pres:mimeType")
    assert (mime.get("declared"), mime.get("sniffed")) == (declared, sniffed)
    resource = etree.fromstring(document).find(".//didl:Resource", NS)
    assert resource.get("mimeType") == resource_mime


def test_oai_header_statement() -> None:
    found = statements(capture_didl(description(oai=oai_header(deleted=True))))
    header = only(found, "pres:oaiHeader")
    assert header.get("endpoint") == "http://example.org/oai"
    assert header.get("deleted") == "true"
    assert [(etree.QName(e).localname, e.text) for e in header] == [
        ("identifier", "oai:example.org:page"),
        ("datestamp", "2024-04-30T08:00:00Z"),
        ("setSpec", "pages"),
        ("setSpec", "pages:cafe"),
    ]
    plain = only(
        statements(capture_didl(description(oai=oai_header(endpoint=None)))), "pres:oaiHeader"
    )
    assert plain.get("endpoint") is None and plain.get("deleted") is None


def test_warc_record_statement() -> None:
    found = statements(capture_didl(description(warc=pointer(truncated="length"))))
    assert dict(only(found, "pres:warcRecord").attrib) == {
        "recordId": RECORD_ID,
        "file": "harvest-20240501-00000-1.warc.gz",
        "offset": "1234",
        "length": "567",
        "type": "response",
        "truncated": "length",
    }
    found = statements(capture_didl(description()))
    assert "truncated" not in only(found, "pres:warcRecord").attrib


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (HARVESTED, "2024-05-01T12:00:00Z"),
        (
            datetime(2024, 5, 1, 14, 0, 0, 250000, tzinfo=timezone(timedelta(hours=2))),
            "2024-05-01T12:00:00.250000Z",
        ),
        (datetime(2024, 5, 1, 12, 0, 0), "2024-05-01T12:00:00Z"),  # naive: taken as UTC
    ],
)
def test_provenance_time_is_utc(moment: datetime, expected: str) -> None:
    found = statements(capture_didl(description(provenance=provenance(harvest_time=moment))))
    element = only(found, "pres:provenance")
    assert element.find("pres:harvestTime", NS).text == expected
    assert element.find("pres:agent", NS).attrib == {"name": "coop-archive", "version": "0.1.0"}
    assert element.find("pres:endpoint", NS).text == "http://example.org/oai"
    assert element.find("pres:strategy", NS).text == "oai-get"


def test_provenance_of_a_crawl_has_no_endpoint() -> None:
    prov = provenance(endpoint=None, strategy="crawl")
    element = only(
        statements(capture_didl(description(provenance=prov, oai=None))), "pres:provenance"
    )
    assert element.find("pres:endpoint", NS) is None
    assert element.find("pres:strategy", NS).text == "crawl"


def test_document_ids_are_fresh_uuids_unless_given() -> None:
    ids = [etree.fromstring(capture_didl(description())).get("DIDLDocumentId") for _ in range(2)]
    assert ids[0] != ids[1]
    for value in ids:
        assert value.startswith("urn:uuid:")
        uuid.UUID(value.removeprefix("urn:uuid:"))


# -- deletion records ------------------------------------------------------------------


def test_deletion_record_with_everything_known() -> None:
    observed = datetime(2024, 6, 1, 9, 30, tzinfo=timezone(timedelta(hours=-5)))
    oai = oai_header(deleted=True, datestamp="2024-06-01")
    document = deletion_didl(
        URL,
        observed=observed,
        oai=oai,
        provenance=provenance(),
        previous=pointer(),
        document_id=DOC_ID,
    )
    found = statements(document)
    assert tags(found) == [
        "dii:Identifier",
        "pres:deletion",
        "pres:oaiHeader",
        "pres:warcRecord",
        "pres:provenance",
    ]
    assert found[0].text == URL
    assert dict(found[1].attrib) == {"observed": "2024-06-01T14:30:00Z", "datestamp": "2024-06-01"}
    assert found[2].get("deleted") == "true"
    assert found[3].get("recordId") == RECORD_ID
    root = etree.fromstring(document)
    assert root.get("DIDLDocumentId") == DOC_ID
    assert root.find(".//didl:Component", NS) is None  # nothing left to point at


def test_deletion_record_with_nothing_known() -> None:
    prov = provenance(endpoint=None, strategy="crawl")
    document = deletion_didl(URL, observed=HARVESTED, oai=None, provenance=prov, previous=None)
    found = statements(document)
    assert tags(found) == ["dii:Identifier", "pres:deletion", "pres:provenance"]
    assert dict(found[1].attrib) == {"observed": "2024-05-01T12:00:00Z"}


# -- any text at all -------------------------------------------------------------------

ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)  # surrogates included
TRICKY_URIS = [
    "http://e.com/?q=%",
    "a#b#c",
    "::::",
    ":a",
    "1a:b",
    "http://x:99999999999/",
    "http://x:/",
    "A://:",
    "http://[::1]:8080/x?y#z",
    "http://x/a[b]?c[]=1",
    "http://x/a b\tc\nd",
    "\x00\ud800",
    "",
]


def clean(value: str) -> str:
    return XML_INVALID.sub("", value)


@pytest.mark.parametrize("url", TRICKY_URIS)
def test_urls_that_are_no_uris_still_validate(url: str) -> None:
    found = statements(capture_didl(description(url=url), document_id=url))
    assert (only(found, "dii:Identifier").text or "") == clean(url)
    stored = only(found, "http:header").get("url")
    assert stored == clean(url) or unquote(stored) == clean(url)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    url=ANY_TEXT,
    texts=st.lists(ANY_TEXT, min_size=12, max_size=12),
    headers=st.lists(st.tuples(ANY_TEXT, ANY_TEXT), max_size=4),
    sets=st.lists(ANY_TEXT, max_size=3),
    status=st.integers(min_value=0, max_value=999),
    offset=st.integers(min_value=0, max_value=2**63),
    moment=st.datetimes(
        min_value=datetime(1000, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.one_of(st.none(), st.timedeltas(-DAY, DAY).map(timezone)),
    ),
    strategy=st.sampled_from(["oai-get", "oai-didl", "crawl"]),
)
def test_any_text_gives_valid_records(
    url: str,
    texts: list[str],
    headers: list[tuple[str, str]],
    sets: list[str],
    status: int,
    offset: int,
    moment: datetime,
    strategy: str,
) -> None:
    warc = WarcPointer(texts[0], texts[1], offset, offset, texts[2], texts[3] or None)
    oai = OaiHeaderInfo(texts[4], texts[5], tuple(sets), texts[6], deleted=status % 2 == 0)
    prov = Provenance(texts[7], texts[8], moment, texts[9], strategy)
    desc = description(
        url=url,
        status=status,
        reason=texts[10],
        protocol=texts[11],
        headers=headers,
        declared_mime=texts[10],
        sniffed_mime=texts[11],
        warc=warc,
        oai=oai,
        provenance=prov,
    )
    found = statements(capture_didl(desc, document_id=texts[0]))
    assert (only(found, "dii:Identifier").text or "") == clean(url)
    fields = only(found, "http:header").iterfind("http:field", NS)
    assert [(f.get("name"), f.text or "") for f in fields] == [
        (clean(n), clean(v)) for n, v in headers
    ]
    assert only(found, "pres:warcRecord").get("recordId") == clean(texts[0])
    deletion = deletion_didl(url, observed=moment, oai=oai, provenance=prov, previous=warc)
    assert (only(statements(deletion), "dii:Identifier").text or "") == clean(url)


# -- sniffing and file names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "url", "expected"),
    [
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3", "http://e.org/a", "application/pdf"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "http://e.org/a.jpg", "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "http://e.org/a", "image/jpeg"),
        (b"GIF89a\x01\x00", "http://e.org/a", "image/gif"),
        (b"GIF87a\x01\x00", "http://e.org/a", "image/gif"),
        (b"PK\x03\x04\x14\x00", "http://e.org/a.zip", "application/zip"),
        (b"PK\x05\x06" + bytes(18), "http://e.org/empty", "application/zip"),
        (
            b"PK\x03\x04\x14\x00",
            "http://e.org/report.DOCX?x=1",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        (b"PK\x03\x04", "http://e.org/book.epub", "application/epub+zip"),
        (b"\x1f\x8b\x08\x00\x00\x00", "http://e.org/a.tar.gz", "application/gzip"),
        (b"<!DOCTYPE html>\n<html>", "http://e.org/", "text/html"),
        (b"\xef\xbb\xbf  \n<!doctype HTML>", "http://e.org/", "text/html"),
        (b"<html lang='en'>", "http://e.org/a.txt", "text/html"),
        (b"<HTML>", "http://e.org/", "text/html"),
        (b"\n\n<p>Hello</p>", "http://e.org/", "text/html"),
        (b"<!-- comment -->", "http://e.org/", "text/html"),
        (b"<html", "http://e.org/", "text/plain"),  # no tag end: not sniffed as HTML
        (b"<htmlfoo>", "http://e.org/", "text/plain"),
        (b"<?xml version='1.0'?><feed/>", "http://e.org/feed", "application/xml"),
        (b"<?xml version='1.0'?><svg/>", "http://e.org/logo.svg", "image/svg+xml"),
        (b"Hello, world.\n", "http://e.org/", "text/plain"),
        ("Gr\u00fc\u00dfe \u2603\n".encode(), "http://e.org/", "text/plain"),
        (b"body { color: red }", "http://e.org/style.css", "text/css"),
        (b'{"a": 1}', "http://e.org/data.json", "application/json"),
        (b"a" * 4095 + "\u00e9".encode(), "http://e.org/", "text/plain"),  # cut inside a char
        (b"\xfe\xffH\x00i", "http://e.org/", "text/plain"),  # UTF-16 byte order mark
        (b"text\x00with NUL", "http://e.org/", None),
        (b"text\x1bwith escape is text", "http://e.org/", "text/plain"),
        (b"\x01\x02\x03binary", "http://e.org/", None),
        (b"\xc3\x28 not UTF-8", "http://e.org/", None),
        (b"ends cut \xc3", "http://e.org/", None),
        (b"", "http://e.org/", None),
    ],
)
def test_sniff_mime(payload: bytes, url: str, expected: str | None) -> None:
    assert sniff_mime(payload, url) == expected


def test_didl_filename_is_safe_stable_and_unique_per_capture() -> None:
    name = didl_filename("http://e.org/a?b=../../etc", "<urn:uuid:1>")
    assert re.fullmatch(r"[0-9a-f]{40}-[0-9a-f]{16}\.xml", name)
    assert name == didl_filename("http://e.org/a?b=../../etc", "<urn:uuid:1>")
    assert name != didl_filename("http://e.org/a?b=../../etc", "<urn:uuid:2>")
    assert name != didl_filename("http://e.org/a?b=../../etd", "<urn:uuid:1>")
    assert re.fullmatch(r"[0-9a-f]{40}-[0-9a-f]{16}\.xml", didl_filename("\ud800", "\x00"))
