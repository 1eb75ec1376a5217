"""One ListRecords page (OAI-PMH §4.5), read so that one broken record spoils only itself.

The page's bytes are archived as received before what is read here is used; this module only
reads them, each record's metadata serialised as the state keeps it. A page that is well-formed
is parsed once by the hardened parser of :mod:`harvester.oai.httpclient`. One that is not is
*salvaged*: the ``<record>`` elements are cut out of the text by their tags (nested ``record``
elements of MARCXML counted), each is tried alone between the page's head and tail, and the
page is parsed again without the ones that fail. Those are reported, with their identifier when
one can be read; the envelope, the token and every other record are used as usual. A record
whose header has no identifier or a bad datestamp is reported the same way. ``<error>`` raises
the harvester's exception of that code, whatever the HTTP status it came with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from lxml import etree

from harvester.exceptions import ProtocolError
from harvester.oai.client import ListedHeader, RawRecord
from harvester.oai.dates import parse_oai_datestamp
from harvester.oai.httpclient import check_envelope, parse_oai_xml
from harvester.oai.models import OAI_NS

_OAI = "{" + OAI_NS + "}"
_HEADER, _METADATA = _OAI + "header", _OAI + "metadata"
_IDENTIFIER_TAG, _DATESTAMP, _SET_SPEC = (_OAI + t for t in ("identifier", "datestamp", "setSpec"))
_RECORD_TAG = re.compile(rb"<(/?)((?:[A-Za-z_][\w.-]*:)?record)(?=[\s/>])")
_IDENTIFIER = re.compile(rb"<(?:[\w.-]+:)?identifier>([^<]{1,300})</(?:[\w.-]+:)?identifier>")


@dataclass(frozen=True)
class RecordsPage:
    """The usable records of one page, what was wrong with the others, and the list's state."""

    records: tuple[RawRecord, ...]
    metadata: tuple[bytes, ...]  # each record's metadata as UTF-8 XML, b"" if none
    broken: tuple[str, ...]  # one line per record left out, naming the page's URL
    response_date: str  # in UTC
    token: str | None
    complete_list_size: int | None
    date_sent: str | None = None  # the responseDate as sent, when it had to be converted


def read_page(content: bytes, url: str, status: int = 200) -> RecordsPage:
    """The page in ``content`` (an answer of HTTP ``status``); OAIError for an ``<error>``,
    ProtocolError when even the envelope is broken."""
    broken: list[str] = []
    try:
        root = parse_oai_xml(content, url)
    except ProtocolError as exc:
        text, broken = _salvaged(content, url, exc)
        root = parse_oai_xml(text, url)
    date, sent = check_envelope(root, "ListRecords", url, status)
    records, metadata = [], []
    for element in root.iterfind(f"{_OAI}ListRecords/{_OAI}record"):
        header, found = _parts(element)
        try:
            records.append(RawRecord(_header(header, url), element))
        except ProtocolError as exc:
            broken.append(str(exc))
            continue
        metadata.append(_xml(found))
    token, size = _resumption(root, url)
    return RecordsPage(tuple(records), tuple(metadata), tuple(broken), date, token, size, sent)


def _parts(record: etree._Element) -> tuple[etree._Element | None, etree._Element | None]:
    """The record's first ``<header>`` and its metadata (:attr:`RawRecord.metadata`: the first
    element inside its ``<metadata>`` parts), in one pass over its children: cheaper than a
    path's set-up for each."""
    header = metadata = None
    for part in record:
        tag = part.tag
        if tag == _HEADER:
            header = part if header is None else header
        elif tag == _METADATA and metadata is None:
            metadata = next(part.iterchildren("*"), None)
    return header, metadata


def _header(element: etree._Element | None, url: str) -> ListedHeader:
    if element is None:
        raise ProtocolError(f"{url}: a <record> without <header>")
    identifier, datestamp, found = _fields(element)
    if not identifier:
        raise ProtocolError(f"{url}: a <header> without <identifier>")
    try:
        _check_datestamp(datestamp)
    except ProtocolError as exc:
        raise ProtocolError(f"{url}: record {identifier!r}: {exc}") from None
    specs = tuple(s.strip() for s in found if s.strip())
    return ListedHeader(identifier, datestamp, specs, element.get("status") == "deleted")


def _xml(metadata: etree._Element | None) -> bytes:
    """``metadata`` as UTF-8 XML; b"" for none."""
    if metadata is None:
        return b""
    return bytes(etree.tostring(metadata, encoding="utf-8", xml_declaration=False, with_tail=False))


def _fields(header: etree._Element) -> tuple[str, str, list[str]]:
    """The first identifier and datestamp (stripped, "" when absent) and every setSpec of a
    header, in one pass over its children."""
    identifier = datestamp = None
    specs = []
    for child in header:
        tag = child.tag
        if tag == _SET_SPEC:
            specs.append(child.text or "")
        elif tag == _IDENTIFIER_TAG and identifier is None:
            identifier = child.text or ""
        elif tag == _DATESTAMP and datestamp is None:
            datestamp = child.text or ""
    return (identifier or "").strip(), (datestamp or "").strip(), specs


@lru_cache(maxsize=4096)
def _check_datestamp(datestamp: str) -> None:
    """ProtocolError unless ``datestamp`` is an OAI-PMH datestamp; the good ones are
    remembered (a page's records share a few: a day-granularity repository's, many)."""
    parse_oai_datestamp(datestamp)


def _resumption(root: etree._Element, url: str) -> tuple[str | None, int | None]:
    element = root.find(f"{_OAI}ListRecords/{_OAI}resumptionToken")
    if element is None:
        return None, None
    size = (element.get("completeListSize") or "").strip()
    if size and not size.isdigit():
        raise ProtocolError(f"{url}: resumptionToken size {size!r} is not a number")
    return (element.text or "").strip() or None, int(size) if size else None


def _salvaged(content: bytes, url: str, error: ProtocolError) -> tuple[bytes, list[str]]:
    """``content`` without the records that do not parse, and a line naming each."""
    spans = record_spans(content)
    if not spans:
        raise error
    head, tail = content[: spans[0][0]], content[spans[-1][1] :]
    kept, broken = [], []
    for start, end in spans:
        chunk = content[start:end]
        try:
            parse_oai_xml(head + chunk + tail, url)
        except ProtocolError as exc:
            broken.append(f"{url}: broken record {_identifier(chunk)} kept as received ({exc})")
            continue
        kept.append(chunk)
    if not broken:
        raise error  # the records are sound: what is broken is the rest
    return head + b"".join(kept) + tail, broken


def record_spans(content: bytes) -> list[tuple[int, int]]:
    """The byte spans of the top-level ``record`` elements, by their tags alone.

    >>> record_spans(b"<r><record><m><record>x</record></m></record><record>y</re")
    [(3, 45)]
    """
    spans, depth, start = [], 0, 0
    for match in _RECORD_TAG.finditer(content):
        closing = match.group(1) == b"/"
        if not closing:
            start = match.start() if depth == 0 else start
            depth += 1
            continue
        if depth == 0:
            continue
        depth -= 1
        end = content.find(b">", match.end())
        if depth == 0 and end >= 0:
            spans.append((start, end + 1))
    return spans


def _identifier(chunk: bytes) -> str:
    found = _IDENTIFIER.search(chunk)
    return repr(found.group(1).decode("utf-8", "replace").strip()) if found else "(no identifier)"
