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
from harvester.archive.xmlsafe import attr, uri


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
) -> bytes:
    """The item's DIDL record, as UTF-8 XML; ``formats`` are (prefix, serialised metadata)."""
    statements = [_identifier(oai.identifier), _oai_header(oai), _provenance_text(provenance)]
    statements += [_metadata(prefix, xml) for prefix, xml in formats]
    return _document(None, statements, "".join(_component(c) for c in linked))


@lru_cache(maxsize=4)
def _provenance_text(provenance: Provenance) -> str:
    """The provenance statement, made once for the many items that share one."""
    return _provenance(provenance)


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
