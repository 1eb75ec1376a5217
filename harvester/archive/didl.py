"""MPEG-21 DIDL preservation records: one DIDL document per archived resource.

The document follows ISO/IEC 21000-2 (Digital Item Declaration): ``didl:DIDL`` holds one
``didl:Item``, whose ``didl:Descriptor`` elements each carry one
``didl:Statement mimeType="application/xml"``, followed by a ``didl:Component`` whose
``didl:Resource`` points at the WARC record holding the resource. A capture's statements, in
this order:

1. ``dii:Identifier`` (ISO/IEC 21000-3): the resource URL, exactly as given;
2. ``http:header`` (``schemas/http_header.xsd``): the status line and header fields, in the
   order sent;
3. ``pres:digests``, ``pres:mimeType``, ``pres:oaiHeader`` (only for resources listed over
   OAI-PMH), ``pres:warcRecord`` and ``pres:provenance`` (``schemas/preservation.xsd``).

A deletion record has ``dii:Identifier``, ``pres:deletion``, ``pres:oaiHeader`` (if any), the
``pres:warcRecord`` of the last capture (if known) and ``pres:provenance``, and no Component:
there is no resource left to point at.

Any text can be given: characters XML 1.0 forbids are dropped, and values the schemas type
``xs:anyURI`` are percent-encoded where needed, so every document is well-formed and valid.
The module also holds the file names of exported records; the content sniffer whose finding
goes into ``pres:mimeType`` is :mod:`harvester.archive.sniff`.
"""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from lxml import etree

from harvester.archive.sniff import sniff_mime

__all__ = [
    "DIDL_NS",
    "DII_NS",
    "HTTP_NS",
    "PRES_NS",
    "STRATEGIES",
    "CaptureDescription",
    "OaiHeaderInfo",
    "Provenance",
    "WarcPointer",
    "capture_didl",
    "deletion_didl",
    "didl_filename",
    "sniff_mime",
]

log = logging.getLogger(__name__)

DIDL_NS = "urn:mpeg:mpeg21:2002:02-DIDL-NS"
DII_NS = "urn:mpeg:mpeg21:2002:01-DII-NS"
HTTP_NS = "urn:coop-archive:http-header:1.0"
PRES_NS = "urn:coop-archive:preservation:1.0"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
DIDL_SCHEMA = (
    "http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd"
)
STRATEGIES = frozenset({"oai-get", "oai-didl", "crawl"})
FALLBACK_MIME = "application/octet-stream"

_NSMAP = {"didl": DIDL_NS, "dii": DII_NS, "http": HTTP_NS, "pres": PRES_NS, "xsi": XSI_NS}
_DIDL, _DII, _HTTP, _PRES = (f"{{{ns}}}" for ns in (DIDL_NS, DII_NS, HTTP_NS, PRES_NS))
_SHA1 = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


# -- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WarcPointer:
    """Where a resource's record sits: ``record_id`` is the WARC-Record-ID, ``<>`` included."""

    record_id: str
    filename: str
    offset: int
    length: int
    record_type: str
    truncated: str | None = None  # the WARC-Truncated reason, e.g. "length"

    def __post_init__(self) -> None:
        if self.offset < 0 or self.length < 0:
            raise ValueError(f"negative offset or length in {self!r}")

    @property
    def uri(self) -> str:
        """The record ID as a bare URI (``urn:uuid:...``)."""
        return self.record_id.strip().removeprefix("<").removesuffix(">")


@dataclass(frozen=True)
class OaiHeaderInfo:
    """The OAI-PMH record header a resource was listed with."""

    identifier: str
    datestamp: str
    set_specs: tuple[str, ...] = ()
    endpoint: str | None = None
    deleted: bool = False


@dataclass(frozen=True)
class Provenance:
    """Who captured the resource, when (naive times are taken as UTC) and how."""

    agent: str
    version: str
    harvest_time: datetime
    endpoint: str | None
    strategy: str  # one of STRATEGIES

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; expected one of {STRATEGIES}")


@dataclass(frozen=True)
class CaptureDescription:
    """Everything a capture's DIDL states; digests are of the payload, in lower-case hex."""

    url: str
    status: int
    reason: str
    protocol: str  # e.g. "HTTP/1.1"; empty if unknown
    headers: Sequence[tuple[str, str]]
    sha1: str
    sha256: str
    declared_mime: str | None  # the Content-Type as sent
    sniffed_mime: str | None
    warc: WarcPointer
    oai: OaiHeaderInfo | None
    provenance: Provenance

    def __post_init__(self) -> None:
        if self.status < 0:
            raise ValueError(f"negative HTTP status {self.status}")
        if not _SHA1.fullmatch(self.sha1) or not _SHA256.fullmatch(self.sha256):
            raise ValueError("sha1 and sha256 must be lower-case hex digests")


# -- documents ---------------------------------------------------------------------------


def capture_didl(desc: CaptureDescription, *, document_id: str | None = None) -> bytes:
    """The DIDL record of one capture, as UTF-8 XML with a declaration."""
    root, item = _new_document(document_id)
    _identifier(_statement(item), desc.url)
    _http_header(_statement(item), desc)
    _digests(_statement(item), desc.sha1, desc.sha256)
    _mime_type(_statement(item), desc.declared_mime, desc.sniffed_mime)
    if desc.oai is not None:
        _oai_header(_statement(item), desc.oai)
    _warc_record(_statement(item), desc.warc)
    _provenance(_statement(item), desc.provenance)
    component = _sub(item, _DIDL + "Component")
    mime = (desc.declared_mime or "").strip() or desc.sniffed_mime or FALLBACK_MIME
    _sub(component, _DIDL + "Resource", attrs={"mimeType": mime, "ref": _uri(desc.warc.uri)})
    return _serialize(root)


def deletion_didl(
    url: str,
    *,
    observed: datetime,
    oai: OaiHeaderInfo | None,
    provenance: Provenance,
    previous: WarcPointer | None,
    document_id: str | None = None,
) -> bytes:
    """The DIDL record saying that ``url`` was found deleted at ``observed``.

    ``previous``, the last capture's record, becomes the document's ``pres:warcRecord``.
    """
    root, item = _new_document(document_id)
    _identifier(_statement(item), url)
    _deletion(_statement(item), observed, oai.datestamp if oai is not None else None)
    if oai is not None:
        _oai_header(_statement(item), oai)
    if previous is not None:
        _warc_record(_statement(item), previous)
    _provenance(_statement(item), provenance)
    return _serialize(root)


def didl_filename(url: str, record_id: str) -> str:
    """A file name for an exported record: unique per capture, safe on any file system.

    >>> didl_filename("http://example.org/", "<urn:uuid:0>")
    'bbf5caaf2e8efeeaf919e0d84a683f4b4d8a2c15-e7b3c711ac992de8.xml'
    """
    return f"{_sha1_hex(url)}-{_sha1_hex(record_id)[:16]}.xml"


def _new_document(document_id: str | None) -> tuple[etree._Element, etree._Element]:
    root = etree.Element(_DIDL + "DIDL", nsmap=_NSMAP)
    root.set("DIDLDocumentId", _uri(document_id or f"urn:uuid:{uuid.uuid4()}"))
    root.set(f"{{{XSI_NS}}}schemaLocation", f"{DIDL_NS} {DIDL_SCHEMA}")
    return root, _sub(root, _DIDL + "Item")


def _statement(item: etree._Element) -> etree._Element:
    """A new ``Descriptor/Statement`` at the end of the item's descriptors."""
    descriptor = _sub(item, _DIDL + "Descriptor")
    return _sub(descriptor, _DIDL + "Statement", attrs={"mimeType": "application/xml"})


def _serialize(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


# -- statements --------------------------------------------------------------------------


def _identifier(parent: etree._Element, url: str) -> None:
    _sub(parent, _DII + "Identifier", url)


def _http_header(parent: etree._Element, desc: CaptureDescription) -> None:
    header = _sub(parent, _HTTP + "header", attrs={"url": _uri(desc.url)})
    status = {"code": str(desc.status), "protocol": desc.protocol or None}
    _sub(header, _HTTP + "status", desc.reason, status)
    for name, value in desc.headers:
        _sub(header, _HTTP + "field", value, {"name": name})


def _digests(parent: etree._Element, sha1: str, sha256: str) -> None:
    digests = _sub(parent, _PRES + "digests")
    _sub(digests, _PRES + "digest", sha1, {"algorithm": "sha1"})
    _sub(digests, _PRES + "digest", sha256, {"algorithm": "sha256"})


def _mime_type(parent: etree._Element, declared: str | None, sniffed: str | None) -> None:
    _sub(parent, _PRES + "mimeType", attrs={"declared": declared, "sniffed": sniffed})


def _oai_header(parent: etree._Element, oai: OaiHeaderInfo) -> None:
    attrs = {
        "endpoint": _uri(oai.endpoint) if oai.endpoint is not None else None,
        "deleted": "true" if oai.deleted else None,
    }
    header = _sub(parent, _PRES + "oaiHeader", attrs=attrs)
    _sub(header, _PRES + "identifier", oai.identifier)
    _sub(header, _PRES + "datestamp", oai.datestamp)
    for spec in oai.set_specs:
        _sub(header, _PRES + "setSpec", spec)


def _deletion(parent: etree._Element, observed: datetime, datestamp: str | None) -> None:
    attrs = {"observed": _datetime(observed), "datestamp": datestamp}
    _sub(parent, _PRES + "deletion", attrs=attrs)


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
        _sub(element, _PRES + "endpoint", _uri(prov.endpoint))
    _sub(element, _PRES + "strategy", prov.strategy)


def _sub(
    parent: etree._Element,
    tag: str,
    text: str | None = None,
    attrs: Mapping[str, str | None] | None = None,
) -> etree._Element:
    """A child element; text and attribute values are made XML-safe, None ones are left out."""
    element = etree.SubElement(parent, tag)
    for name, value in (attrs or {}).items():
        if value is not None:
            element.set(name, _xml_text(value))
    if text is not None:
        element.text = _xml_text(text)
    return element


# -- values made XML-safe ----------------------------------------------------------------

# XML 1.0 section 2.2, Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

# An RFC 3986 URI-reference (section 4.1), slightly narrowed where libxml2's xs:anyURI check
# is stricter than the RFC: a port needs digits and must fit in an int.
_CHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
_PCHAR = rf"(?:{_CHAR}|[:@])"
_AUTHORITY = rf"(?:(?:{_CHAR}|:)*@)?(?:\[[0-9A-Fa-f:.]+\]|{_CHAR}*)(?::[0-9]{{1,9}})?"
_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*:"
_NETWORK_OR_ABSOLUTE = rf"//{_AUTHORITY}{_PATH_ABEMPTY}|/(?:{_PCHAR}+{_PATH_ABEMPTY})?"
_QUERY_CHARS = rf"(?:{_PCHAR}|[/?])*"
_URI_REFERENCE = re.compile(
    rf"(?:{_SCHEME}(?:{_NETWORK_OR_ABSOLUTE}|{_PCHAR}+{_PATH_ABEMPTY})?"  # URI
    rf"|(?:{_NETWORK_OR_ABSOLUTE}|(?:{_CHAR}|@)+{_PATH_ABEMPTY})?)"  # relative reference
    rf"(?:\?{_QUERY_CHARS})?(?:\#{_QUERY_CHARS})?"
)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_URI_SAFE = "!$&'()*+,/:;=?@~%"


def _xml_text(value: str) -> str:
    """``value`` without the characters XML 1.0 cannot hold at all."""
    return _INVALID.sub("", value)


def _uri(value: str) -> str:
    """``value`` as an ``xs:anyURI`` that both RFC 3986 and libxml2 accept.

    An RFC 3986 reference is kept as it is. Otherwise characters a URI cannot hold are
    percent-encoded (as RFC 3987, section 3.1 maps an IRI to a URI), and if that is still
    not a URI reference the whole value is; unquoting gives the original back.
    """
    value = _xml_text(value)
    if _URI_REFERENCE.fullmatch(value):
        return value
    head, hash_mark, fragment = _BAD_PERCENT.sub("%25", value).partition("#")
    escaped = quote(head, safe=_URI_SAFE) + hash_mark + quote(fragment, safe=_URI_SAFE)
    if _URI_REFERENCE.fullmatch(escaped):
        return escaped
    log.debug("percent-encoding all of %r to make it an xs:anyURI", value)
    return quote(value, safe="")


def _datetime(moment: datetime) -> str:
    """An ``xs:dateTime`` in UTC; a naive ``moment`` is taken to be UTC already."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.replace(tzinfo=None).isoformat() + "Z"


def _sha1_hex(value: str) -> str:
    return hashlib.sha1(value.encode("utf-8", "surrogatepass")).hexdigest()
