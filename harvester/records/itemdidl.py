"""The MPEG-21 DIDL preservation record of one repository item (records mode).

``didl:DIDL/didl:Item`` holds, each in its ``Descriptor/Statement``: ``dii:Identifier`` (the
item's OAI identifier), ``pres:oaiHeader`` (identifier, datestamp, sets, endpoint),
``pres:provenance`` (strategy ``oai-records``), then one ``pres:metadata prefix="…"`` per
metadata format, holding the format's XML by value, as the repository sent it. Then one
``didl:Component`` per linked resource archived: its ``dii:Identifier`` (the URI),
``pres:digests`` and ``pres:warcRecord`` (the WARC-Record-ID and where it sits), and a
``didl:Resource`` whose ``ref`` is the URI. The layout and escaping are
:mod:`harvester.archive.didl`'s, whose statements this module reuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from coop_common.xmltext import is_plain
from harvester.archive.didl import (
    _HEAD,
    _STATEMENT_END,
    _STATEMENT_START,
    _TAIL,
    FALLBACK_MIME,
    OaiHeaderInfo,
    Provenance,
    WarcPointer,
    _digests,
    _document,
    _identifier,
    _oai_header,
    _provenance,
    _warc_record,
)
from harvester.archive.randomids import uuid4_texts
from harvester.archive.xmlsafe import attr, text, uri

# The item's document up to its DIDLDocumentId, then up to its identifier, then between its
# identifier in the header and its datestamp.
_HEAD_START, _, _HEAD_REST = _HEAD.partition("{}")
_OPEN = f"{_HEAD_START}urn:uuid:"
_TO_IDENTIFIER = f"{_HEAD_REST}{_STATEMENT_START}        <dii:Identifier>"
_TO_DATESTAMP = "</pres:identifier>\n          <pres:datestamp>"
_SET_OPEN = "          <pres:setSpec>"
_SET_CLOSE = "</pres:setSpec>\n"
_SET_BETWEEN = _SET_CLOSE + _SET_OPEN
Frame = tuple[str, str]  # from the first identifier to the second; from the sets to metadata
_METADATA_CLOSE = f"</pres:metadata>\n{_STATEMENT_END}"


@dataclass(frozen=True)
class LinkedCapture:
    """One linked resource as archived: its URI, the record holding it and its digests."""

    url: str
    mime: str | None
    sha1: str
    sha256: str
    warc: WarcPointer


def item_didl(
    oai: OaiHeaderInfo,
    formats: Sequence[tuple[str, bytes]],
    linked: Sequence[LinkedCapture],
    provenance: Provenance,
    *,
    document_id: str | None = None,
) -> bytes:
    """The item's DIDL record, as UTF-8 XML; ``formats`` are (prefix, serialised metadata).

    The text is :mod:`harvester.archive.didl`'s document of these statements, byte for byte;
    what every item of a run shares (the endpoint, made an ``xs:anyURI``, and the provenance)
    is made once."""
    if oai.deleted or document_id is not None:
        statements = [_identifier(oai.identifier), _oai_header(oai), _provenance(provenance)]
        statements += [_metadata(prefix, xml) for prefix, xml in formats]
        return _document(document_id, statements, "".join(_component(c) for c in linked))
    return plain_item_didl(
        (oai.identifier, oai.datestamp, oai.set_specs),
        formats,
        frame(oai.endpoint, provenance),
        uuid4_texts(1)[0],
        "".join(_component(c) for c in linked),
    )


def plain_item_didl(
    header: tuple[str, str, Sequence[str]],
    formats: Sequence[tuple[str, bytes]],
    shared: Frame,
    document_uuid: str,
    components: str = "",
) -> bytes:
    """:func:`item_didl`'s record of an item that is not deleted, ``header`` its identifier,
    datestamp and sets, named ``urn:uuid:document_uuid``; ``shared`` is
    :func:`frame`'s of its endpoint and provenance, ``components`` the linked resources'
    (none for ``--linked none``). One template a record: the builder process makes many."""
    identifier, datestamp, specs = header
    if not is_plain(f"{identifier}{datestamp}{''.join(specs)}"):  # most have nothing to escape
        identifier, datestamp, specs = text(identifier), text(datestamp), list(map(text, specs))
    sets = f"{_SET_OPEN}{_SET_BETWEEN.join(specs)}{_SET_CLOSE}" if specs else ""
    metadata = "".join([_metadata_statement(prefix, xml) for prefix, xml in formats])
    return (
        f"{_OPEN}{document_uuid}{_TO_IDENTIFIER}{identifier}{shared[0]}{identifier}{_TO_DATESTAMP}"
        f"{datestamp}</pres:datestamp>\n{sets}{shared[1]}{metadata}{components}{_TAIL}"
    ).encode()


@lru_cache(maxsize=4)
def frame(endpoint: str | None, provenance: Provenance) -> Frame:
    """The text from the item's first identifier to its second (the ``pres:oaiHeader`` start
    tag, whose endpoint is made an ``xs:anyURI``), and from its sets to its metadata (the
    provenance statement): made once for the many items that share them."""
    endpoint_attr = "" if endpoint is None else f' endpoint="{attr(uri(endpoint))}"'
    return (
        f"</dii:Identifier>\n{_STATEMENT_END}{_STATEMENT_START}"
        f"        <pres:oaiHeader{endpoint_attr}>\n          <pres:identifier>",
        f"        </pres:oaiHeader>\n{_STATEMENT_END}"
        f"{_STATEMENT_START}{_provenance(provenance)}{_STATEMENT_END}",
    )


def _metadata(prefix: str, xml: bytes) -> str:
    body = xml.decode("utf-8").strip()
    return f'        <pres:metadata prefix="{attr(prefix)}">{body}</pres:metadata>\n'


def _metadata_statement(prefix: str, xml: bytes) -> str:
    """:func:`_metadata` in its ``Descriptor/Statement``."""
    return f"{_metadata_open(prefix)}{xml.decode('utf-8').strip()}{_METADATA_CLOSE}"


@lru_cache(maxsize=64)
def _metadata_open(prefix: str) -> str:
    return f'{_STATEMENT_START}        <pres:metadata prefix="{attr(prefix)}">'


def _component(capture: LinkedCapture) -> str:
    parts = ["    <didl:Component>\n"]
    for statement in (
        _identifier(capture.url),
        _digests(capture.sha1, capture.sha256),
        _warc_record(capture.warc),
    ):
        parts += [
            '      <didl:Descriptor>\n        <didl:Statement mimeType="application/xml">\n',
            "  " + statement.replace("\n        ", "\n          "),
            "        </didl:Statement>\n      </didl:Descriptor>\n",
        ]
    mime = (capture.mime or "").split(";")[0].strip() or FALLBACK_MIME
    parts += [
        f'      <didl:Resource mimeType="{attr(mime)}" ref="{attr(uri(capture.url))}"/>\n',
        "    </didl:Component>\n",
    ]
    return "".join(parts)
