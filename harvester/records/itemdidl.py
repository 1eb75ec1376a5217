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
from harvester.archive.xmlsafe import attr, text, uri
from harvester.records.randomids import uuid4_texts


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
    oai_open, shared = _frame(oai.endpoint, provenance)
    ident = text(oai.identifier)
    parts = [
        _HEAD.format(f"urn:uuid:{uuid4_texts(1)[0]}"),
        _STATEMENT_START,
        f"        <dii:Identifier>{ident}</dii:Identifier>\n",
        _STATEMENT_END,
        _STATEMENT_START,
        oai_open,
        f"          <pres:identifier>{ident}</pres:identifier>\n",
        f"          <pres:datestamp>{text(oai.datestamp)}</pres:datestamp>\n",
    ]
    parts += [f"          <pres:setSpec>{text(spec)}</pres:setSpec>\n" for spec in oai.set_specs]
    parts += ["        </pres:oaiHeader>\n", _STATEMENT_END, shared]
    for prefix, xml in formats:
        parts += (_STATEMENT_START, _metadata(prefix, xml), _STATEMENT_END)
    parts += [_component(c) for c in linked]
    parts.append(_TAIL)
    return "".join(parts).encode("utf-8")


@lru_cache(maxsize=4)
def _frame(endpoint: str | None, provenance: Provenance) -> tuple[str, str]:
    """The ``pres:oaiHeader`` start tag and the provenance statement in its Descriptor, made
    once for the many items that share them."""
    endpoint_attr = "" if endpoint is None else f' endpoint="{attr(uri(endpoint))}"'
    return (
        f"        <pres:oaiHeader{endpoint_attr}>\n",
        _STATEMENT_START + _provenance(provenance) + _STATEMENT_END,
    )


def _metadata(prefix: str, xml: bytes) -> str:
    body = xml.decode("utf-8").strip()
    return f'        <pres:metadata prefix="{attr(prefix)}">{body}</pres:metadata>\n'


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
