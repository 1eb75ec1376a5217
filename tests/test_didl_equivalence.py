"""harvester.archive.didl writes its XML as text; these tests hold that text to the document
lxml builds and serialises from the same values (the module's earlier implementation, kept
here only as the reference).

For hostile values of every field, the written document must parse with a safe parser, be
valid, be C14N-equal to the reference and, as things stand, be byte-identical to it. C14N
equality is the contract; byte identity holds for libxml2's serialiser as of 2.14, and an
lxml upgrade that changes how libxml2 escapes could make that one check too strict.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from coop_common.xmltext import clean as xml_text
from harvester.archive.didl import (
    DIDL_NS,
    DIDL_SCHEMA,
    DII_NS,
    FALLBACK_MIME,
    HTTP_NS,
    PRES_NS,
    STRATEGIES,
    XSI_NS,
    CaptureDescription,
    OaiHeaderInfo,
    Provenance,
    WarcPointer,
    _datetime,
    capture_didl,
    deletion_didl,
)
from harvester.archive.xmlsafe import uri
from tests.test_didl import DAY, DOC_ID, description, statements

SAFE_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)

# -- the reference: an lxml tree, pretty-printed -----------------------------------------
# Values are made XML-safe and xs:anyURI by the module's own helpers: what is checked here
# is how the document is put together and escaped, not those helpers.

_NSMAP = {"didl": DIDL_NS, "dii": DII_NS, "http": HTTP_NS, "pres": PRES_NS, "xsi": XSI_NS}
_DIDL, _DII, _HTTP, _PRES = (f"{{{ns}}}" for ns in (DIDL_NS, DII_NS, HTTP_NS, PRES_NS))


def reference_capture(desc: CaptureDescription, document_id: str) -> bytes:
    root, item = _new_document(document_id)
    _sub(_statement(item), _DII + "Identifier", desc.url)
    header = _sub(_statement(item), _HTTP + "header", attrs={"url": uri(desc.url)})
    status = {"code": str(desc.status), "protocol": desc.protocol or None}
    _sub(header, _HTTP + "status", desc.reason, status)
    for name, value in desc.headers:
        _sub(header, _HTTP + "field", value, {"name": name})
    digests = _sub(_statement(item), _PRES + "digests")
    _sub(digests, _PRES + "digest", desc.sha1, {"algorithm": "sha1"})
    _sub(digests, _PRES + "digest", desc.sha256, {"algorithm": "sha256"})
    mime_attrs = {"declared": desc.declared_mime, "sniffed": desc.sniffed_mime}
    _sub(_statement(item), _PRES + "mimeType", attrs=mime_attrs)
    if desc.oai is not None:
        _oai_header(_statement(item), desc.oai)
    _warc_record(_statement(item), desc.warc)
    _provenance(_statement(item), desc.provenance)
    component = _sub(item, _DIDL + "Component")
    mime = (desc.declared_mime or "").strip() or desc.sniffed_mime or FALLBACK_MIME
    _sub(component, _DIDL + "Resource", attrs={"mimeType": mime, "ref": uri(desc.warc.uri)})
    return _serialize(root)


def reference_deletion(
    url: str,
    observed: datetime,
    oai: OaiHeaderInfo | None,
    provenance: Provenance,
    previous: WarcPointer | None,
    document_id: str,
) -> bytes:
    root, item = _new_document(document_id)
    _sub(_statement(item), _DII + "Identifier", url)
    attrs = {"observed": _datetime(observed), "datestamp": oai.datestamp if oai else None}
    _sub(_statement(item), _PRES + "deletion", attrs=attrs)
    if oai is not None:
        _oai_header(_statement(item), oai)
    if previous is not None:
        _warc_record(_statement(item), previous)
    _provenance(_statement(item), provenance)
    return _serialize(root)


def _new_document(document_id: str) -> tuple[etree._Element, etree._Element]:
    root = etree.Element(_DIDL + "DIDL", nsmap=_NSMAP)
    root.set("DIDLDocumentId", uri(document_id))
    root.set(f"{{{XSI_NS}}}schemaLocation", f"{DIDL_NS} {DIDL_SCHEMA}")
    return root, _sub(root, _DIDL + "Item")


def _statement(item: etree._Element) -> etree._Element:
    descriptor = _sub(item, _DIDL + "Descriptor")
    return _sub(descriptor, _DIDL + "Statement", attrs={"mimeType": "application/xml"})


def _oai_header(parent: etree._Element, oai: OaiHeaderInfo) -> None:
    attrs = {
        "endpoint": uri(oai.endpoint) if oai.endpoint is not None else None,
        "deleted": "true" if oai.deleted else None,
    }
    header = _sub(parent, _PRES + "oaiHeader", attrs=attrs)
    _sub(header, _PRES + "identifier", oai.identifier)
    _sub(header, _PRES + "datestamp", oai.datestamp)
    for spec in oai.set_specs:
        _sub(header, _PRES + "setSpec", spec)


def _warc_record(parent: etree._Element, warc: WarcPointer) -> None:
    attrs = {
        "recordId": warc.record_id,
        "file": warc.filename,
        "offset": str(warc.offset),
        "length": str(warc.length),
        "type": warc.record_type,
        "truncated": warc.truncated,
    }
    _sub(parent, _PRES + "warcRecord", attrs=attrs)


def _provenance(parent: etree._Element, prov: Provenance) -> None:
    element = _sub(parent, _PRES + "provenance")
    _sub(element, _PRES + "agent", attrs={"name": prov.agent, "version": prov.version})
    _sub(element, _PRES + "harvestTime", _datetime(prov.harvest_time))
    if prov.endpoint is not None:
        _sub(element, _PRES + "endpoint", uri(prov.endpoint))
    _sub(element, _PRES + "strategy", prov.strategy)


def _sub(
    parent: etree._Element,
    tag: str,
    text: str | None = None,
    attrs: Mapping[str, str | None] | None = None,
) -> etree._Element:
    element = etree.SubElement(parent, tag)
    for name, value in (attrs or {}).items():
        if value is not None:
            element.set(name, xml_text(value))
    if text is not None:
        element.text = xml_text(text)
    return element


def _serialize(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


# -- the check ---------------------------------------------------------------------------


def assert_same_document(written: bytes, reference: bytes) -> None:
    """Well-formed and valid, C14N-equal to the reference, and byte-identical to it."""
    root = etree.fromstring(written, SAFE_PARSER)
    statements(written)  # schema-valid, statement by statement
    expected = etree.fromstring(reference, SAFE_PARSER)
    assert etree.tostring(root, method="c14n") == etree.tostring(expected, method="c14n")
    assert written == reference


def test_every_character_in_text_and_attributes_is_written_as_lxml_writes_it() -> None:
    every = "".join(map(chr, range(0x110000)))  # every code point, surrogates included
    # In pieces: the statements are checked one by one, re-serialised as ASCII with character
    # references, and libxml2 will not parse a line of more than 10 MB.
    pieces = [every[start : start + 0x20000] for start in range(0, len(every), 0x20000)]
    desc = description(headers=[(piece, piece) for piece in pieces])
    assert_same_document(capture_didl(desc, document_id=DOC_ID), reference_capture(desc, DOC_ID))


def test_quoted_header_values_beside_ones_to_escape_are_written_as_lxml_writes_them() -> None:
    """An ETag's quotes need no escaping in element content (the per-field path's case)."""
    for headers in (
        [("ETag", '"6756f2a0-3e4"'), ("Server", "nginx")],
        [("ETag", '"a"'), ("X-Odd", "a<b & c>\r\x01"), ('X-"q"', "v")],
    ):
        desc = description(headers=headers)
        assert_same_document(
            capture_didl(desc, document_id=DOC_ID), reference_capture(desc, DOC_ID)
        )


def test_a_fresh_document_id_is_written_as_lxml_writes_it() -> None:
    written = capture_didl(description())
    document_id = etree.fromstring(written, SAFE_PARSER).get("DIDLDocumentId")
    assert written == reference_capture(description(), document_id)


# -- hostile values ----------------------------------------------------------------------

ANY_CHAR = st.characters(exclude_categories=())  # controls and lone surrogates included
PIECES = [
    "]]>",
    "<![CDATA[",
    "<!--",
    "-->",
    "<?xml?>",
    "&",
    "&amp;",
    "&#0;",
    "&lt;",
    "&nosuch;",
    "<",
    ">",
    '"',
    "'",
    '="',
    "\t",
    "\n",
    "\r",
    "\r\n",
    " ",
    "\x00",
    "\x08",
    "\x0b",
    "\x1f",
    "\x7f",
    "\x85",
    "\u2028",
    "\ud800",
    "\udfff",
    "\ufeff",
    "\ufffe",
    "\uffff",
    "\U0001f600",
    "\U0010ffff",
    "%",
    "%zz",
    "%C3%A9",
    "#",
    "?",
    "//",
    ":",
    "@",
    "[::1]",
    "caf\u00e9",
    "\u65e5\u672c",
]
PIECE = st.one_of(st.sampled_from(PIECES), st.text(ANY_CHAR, max_size=8))
SHORT = st.lists(PIECE, max_size=8).map("".join)
LONG = st.tuples(SHORT, st.integers(min_value=100, max_value=1000)).map(
    lambda repeat: (repeat[0] or "]]>&<") * repeat[1]
)
URL = st.builds(
    "{}://{}{}/{}?{}#{}".format,
    st.sampled_from(["http", "https", "HTTP", "urn", "x-y+z.1"]),
    st.text(st.characters(categories=["L", "N", "S"]), max_size=12),
    st.sampled_from(["", ":80", ":", ":99999999999", "@host"]),
    SHORT,
    SHORT,
    SHORT,
)
TEXT = st.one_of(SHORT, URL, LONG)
MAYBE_TEXT = st.none() | TEXT
MOMENT = st.datetimes(
    min_value=datetime(1000, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.none() | st.timedeltas(-DAY, DAY).map(timezone),
)
SIZE = st.integers(min_value=0, max_value=2**63)
DOCUMENT_ID = TEXT.map(lambda value: value or DOC_ID)  # an empty one asks for a fresh uuid

WARC = st.builds(WarcPointer, TEXT, TEXT, SIZE, SIZE, TEXT, MAYBE_TEXT)
OAI = st.builds(
    OaiHeaderInfo, TEXT, TEXT, st.lists(TEXT, max_size=3).map(tuple), MAYBE_TEXT, st.booleans()
)
PROVENANCE = st.builds(
    Provenance, TEXT, TEXT, MOMENT, MAYBE_TEXT, st.sampled_from(sorted(STRATEGIES))
)
CAPTURE = st.builds(
    CaptureDescription,
    url=TEXT,
    status=st.integers(min_value=0, max_value=10**12),
    reason=TEXT,
    protocol=TEXT,
    headers=st.lists(st.tuples(TEXT, TEXT), max_size=5),
    sha1=st.binary(max_size=8).map(lambda data: hashlib.sha1(data).hexdigest()),
    sha256=st.binary(max_size=8).map(lambda data: hashlib.sha256(data).hexdigest()),
    declared_mime=MAYBE_TEXT,
    sniffed_mime=MAYBE_TEXT,
    warc=WARC,
    oai=st.none() | OAI,
    provenance=PROVENANCE,
)
HOSTILE = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@HOSTILE
@given(desc=CAPTURE, document_id=DOCUMENT_ID)
def test_capture_is_the_document_lxml_builds(desc: CaptureDescription, document_id: str) -> None:
    assert_same_document(
        capture_didl(desc, document_id=document_id), reference_capture(desc, document_id)
    )


@HOSTILE
@given(
    url=TEXT,
    observed=MOMENT,
    oai=st.none() | OAI,
    provenance=PROVENANCE,
    previous=st.none() | WARC,
    document_id=DOCUMENT_ID,
)
def test_deletion_is_the_document_lxml_builds(
    url: str,
    observed: datetime,
    oai: OaiHeaderInfo | None,
    provenance: Provenance,
    previous: WarcPointer | None,
    document_id: str,
) -> None:
    written = deletion_didl(
        url,
        observed=observed,
        oai=oai,
        provenance=provenance,
        previous=previous,
        document_id=document_id,
    )
    expected = reference_deletion(url, observed, oai, provenance, previous, document_id)
    assert_same_document(written, expected)
