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
   OAI-PMH), ``pres:warcRecord`` and ``pres:provenance`` (``schemas/preservation.xsd``);
4. with ``--identify``, the payload's PREMIS 3 object and one ``pres:analysis`` per tool
   that identified it (:mod:`harvester.archive.formatid.identifier`).

A deletion record has ``dii:Identifier``, ``pres:deletion``, ``pres:oaiHeader`` (if any), the
``pres:warcRecord`` of the last capture (if known) and ``pres:provenance``, and no Component:
there is no resource left to point at.

Any text can be given: characters XML 1.0 forbids are dropped, and values the schemas type
``xs:anyURI`` are percent-encoded where needed (:mod:`harvester.archive.xmlsafe`), so every
document is well-formed and valid. The text is written directly, not built as an lxml tree,
byte for byte as lxml would serialise it. The module also holds the file names of exported
records; the content sniffer whose finding goes into ``pres:mimeType`` is
:mod:`harvester.archive.formatid.sniff`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from harvester.archive.formatid.sniff import sniff_mime
from harvester.archive.randomids import fresh_uuid
from harvester.archive.xmlsafe import attr, text, uri

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
STRATEGIES = frozenset({"oai-get", "oai-didl", "oai-records", "resourcesync", "crawl"})
FALLBACK_MIME = "application/octet-stream"

_ESCAPED = re.compile(r"[^ !#-%\'-;=?-~]")  # all but the printable ASCII left as it is
# Element content keeps '"' as it is (an ETag's quotes): all but the printable ASCII text() keeps
_TEXT_ESCAPED = re.compile(r"[^ -%\'-;=?-~]")
_UUID_URN = re.compile(r"urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SHA1 = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


# -- values ------------------------------------------------------------------------------


@dataclass(slots=True)
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


@dataclass(slots=True)
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


@dataclass(slots=True)
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
    # The payload's format identification (harvester.archive.formatid.identifier): statements as
    # laid
    # out here, after the provenance.
    identified: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.status < 0:
            raise ValueError(f"negative HTTP status {self.status}")
        if not _SHA1.fullmatch(self.sha1) or not _SHA256.fullmatch(self.sha256):
            raise ValueError("sha1 and sha256 must be lower-case hex digests")


# -- documents ---------------------------------------------------------------------------

# The text is written directly, laid out and escaped as lxml's pretty-printing serialiser
# lays out and escapes the same tree, byte for byte: building that tree cost far more.
_HEAD = (
    "<?xml version='1.0' encoding='UTF-8'?>\n"
    f'<didl:DIDL xmlns:didl="{DIDL_NS}" xmlns:dii="{DII_NS}" xmlns:http="{HTTP_NS}"'
    f' xmlns:pres="{PRES_NS}" xmlns:xsi="{XSI_NS}" DIDLDocumentId="{{}}"'
    f' xsi:schemaLocation="{DIDL_NS} {DIDL_SCHEMA}">\n'
    "  <didl:Item>\n"
)
_STATEMENT_START = '    <didl:Descriptor>\n      <didl:Statement mimeType="application/xml">\n'
_STATEMENT_END = "      </didl:Statement>\n    </didl:Descriptor>\n"
_TAIL = "  </didl:Item>\n</didl:DIDL>\n"


def capture_didl(desc: CaptureDescription, *, document_id: str | None = None) -> bytes:
    """The DIDL record of one capture, as UTF-8 XML with a declaration."""
    statements = [
        _identifier(desc.url),
        _http_header(desc),
        _digests(desc.sha1, desc.sha256),
        _mime_type(desc.declared_mime, desc.sniffed_mime),
    ]
    if desc.oai is not None:
        statements.append(_oai_header(desc.oai))
    statements += [_warc_record(desc.warc), _provenance(desc.provenance), *desc.identified]
    mime = (desc.declared_mime or "").strip() or desc.sniffed_mime or FALLBACK_MIME
    return _document(document_id, statements, _component(mime, desc.warc.uri))


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
    statements = [
        _identifier(url),
        _deletion(observed, oai.datestamp if oai is not None else None),
    ]
    if oai is not None:
        statements.append(_oai_header(oai))
    if previous is not None:
        statements.append(_warc_record(previous))
    statements.append(_provenance(provenance))
    return _document(document_id, statements)


def page_didl(url: str, parts: list[tuple[str, str]], provenance: Provenance) -> bytes:
    """The DIDL record of a page captured by a browser: one component per record of what the
    page is made of, each a (media type, ``urn:uuid`` record ID) pair, the page's own first."""
    components = "".join(_component(mime or FALLBACK_MIME, ref) for mime, ref in parts)
    return _document(None, [_identifier(url), _provenance(provenance)], components)


def didl_filename(url: str, record_id: str) -> str:
    """A file name for an exported record: unique per capture, safe on any file system.

    >>> didl_filename("http://example.org/", "<urn:uuid:0>")
    'bbf5caaf2e8efeeaf919e0d84a683f4b4d8a2c15-e7b3c711ac992de8.xml'
    """
    return f"{_sha1_hex(url)}-{_sha1_hex(record_id)[:16]}.xml"


def _document(document_id: str | None, statements: list[str], component: str = "") -> bytes:
    """The whole document: each statement in its ``Descriptor/Statement``, then the component."""
    # A fresh urn:uuid is an xs:anyURI already, with nothing to escape.
    doc_id = attr(uri(document_id)) if document_id else f"urn:uuid:{fresh_uuid()}"
    parts = [_HEAD.format(doc_id)]
    for statement in statements:
        parts += (_STATEMENT_START, statement, _STATEMENT_END)
    parts += (component, _TAIL)
    return "".join(parts).encode("utf-8")


def _component(mime: str, ref: str) -> str:
    ref = ref if _UUID_URN.fullmatch(ref) else attr(uri(ref))
    return (
        "    <didl:Component>\n"
        f'      <didl:Resource mimeType="{_attr(mime)}" ref="{ref}"/>\n'
        "    </didl:Component>\n"
    )


# -- statements: each is its element's lines, indented to sit inside a Statement --------


def _identifier(url: str) -> str:
    return f"        <dii:Identifier>{text(url)}</dii:Identifier>\n"


def _http_header(desc: CaptureDescription) -> str:
    protocol = _optional("protocol", desc.protocol or None)
    lines = [
        f'        <http:header url="{attr(uri(desc.url))}">\n',
        f'          <http:status code="{desc.status!s}"{protocol}>'
        f"{text(desc.reason)}</http:status>\n",
    ]
    names, values = "".join([n for n, _ in desc.headers]), "".join([v for _, v in desc.headers])
    if _ESCAPED.search(names) is None and _TEXT_ESCAPED.search(values) is None:  # most are
        lines += [
            f'          <http:field name="{name}">{value}</http:field>\n'
            for name, value in desc.headers
        ]
    else:
        lines += [
            f'          <http:field name="{_attr(name)}">{_text(value)}</http:field>\n'
            for name, value in desc.headers
        ]
    lines.append("        </http:header>\n")
    return "".join(lines)


def _digests(sha1: str, sha256: str) -> str:
    return (
        "        <pres:digests>\n"
        f'          <pres:digest algorithm="sha1">{text(sha1)}</pres:digest>\n'
        f'          <pres:digest algorithm="sha256">{text(sha256)}</pres:digest>\n'
        "        </pres:digests>\n"
    )


def _mime_type(declared: str | None, sniffed: str | None) -> str:
    attrs = _optional("declared", declared) + _optional("sniffed", sniffed)
    return f"        <pres:mimeType{attrs}/>\n"


def _oai_header(oai: OaiHeaderInfo) -> str:
    endpoint = _optional("endpoint", _uri(oai.endpoint) if oai.endpoint is not None else None)
    deleted = ' deleted="true"' if oai.deleted else ""
    lines = [
        f"        <pres:oaiHeader{endpoint}{deleted}>\n",
        f"          <pres:identifier>{text(oai.identifier)}</pres:identifier>\n",
        f"          <pres:datestamp>{text(oai.datestamp)}</pres:datestamp>\n",
    ]
    lines += [f"          <pres:setSpec>{text(spec)}</pres:setSpec>\n" for spec in oai.set_specs]
    lines.append("        </pres:oaiHeader>\n")
    return "".join(lines)


def _deletion(observed: datetime, datestamp: str | None) -> str:
    datestamp_attr = _optional("datestamp", datestamp)
    return f'        <pres:deletion observed="{_datetime(observed)}"{datestamp_attr}/>\n'


def _warc_record(warc: WarcPointer) -> str:
    return (
        f'        <pres:warcRecord recordId="{_attr(warc.record_id)}"'
        f' file="{_attr(warc.filename)}" offset="{warc.offset!s}" length="{warc.length!s}"'
        f' type="{_attr(warc.record_type)}"{_optional("truncated", warc.truncated)}/>\n'
    )


def _provenance(prov: Provenance) -> str:
    head, tail = _provenance_parts(prov.agent, prov.version, prov.endpoint, prov.strategy)
    return f"{head}{_datetime(prov.harvest_time)}{tail}"


@functools.lru_cache(maxsize=64)
def _provenance_parts(
    agent: str, version: str, endpoint: str | None, strategy: str
) -> tuple[str, str]:
    """The provenance statement before and after its harvest time: the same for every
    record of a run, so made once."""
    head = (
        "        <pres:provenance>\n"
        f'          <pres:agent name="{attr(agent)}" version="{attr(version)}"/>\n'
        "          <pres:harvestTime>"
    )
    lines = ["</pres:harvestTime>\n"]
    if endpoint is not None:
        lines.append(f"          <pres:endpoint>{text(uri(endpoint))}</pres:endpoint>\n")
    lines += [
        f"          <pres:strategy>{text(strategy)}</pres:strategy>\n",
        "        </pres:provenance>\n",
    ]
    return head, "".join(lines)


@functools.lru_cache(maxsize=64)
def _uri(value: str) -> str:
    """:func:`uri` of a value every record repeats (the endpoint), made once."""
    return uri(value)


def _attr(value: str) -> str:
    return value if _ESCAPED.search(value) is None else attr(value)


def _text(value: str) -> str:
    return value if _TEXT_ESCAPED.search(value) is None else text(value)


def _optional(name: str, value: str | None) -> str:
    """`` name="value"``, or nothing if ``value`` is None."""
    return "" if value is None else f' {name}="{_attr(value)}"'


def _datetime(moment: datetime) -> str:
    """An ``xs:dateTime`` in UTC; a naive ``moment`` is taken to be UTC already."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.replace(tzinfo=None).isoformat() + "Z"


def _sha1_hex(value: str) -> str:
    return hashlib.sha1(value.encode("utf-8", "surrogatepass")).hexdigest()
