"""``oai_didl``: an MPEG-21 DIDL document (ISO/IEC 21000-2) holding the file itself.

As in mod_oai, one Item per file: a ``dii:Identifier`` with the URL, descriptors with the
``http_header`` and ``oai_dc`` records and the digests, and a Component with the resource by
reference (``ref`` = URL) and, for files up to ``inline_max`` bytes, by value in base64. A file
whose bytes no longer match the indexed digest (changed since the last refresh) is given by
reference only, so a record never pairs new bytes with old metadata. The Component carries
the file's forensic metadata as Descriptors: its PREMIS 3 object description
(:mod:`coop_common.premis`) and one ``pres:analysis`` a plugin that ran on it
(:mod:`coop_common.toolreport`).
"""

from __future__ import annotations

import hashlib

import pybase64

from coop_common.premis import premis_element
from coop_common.toolreport import analysis_element
from coop_common.xmltext import attr, text
from server_module.files.docroot import open_public
from server_module.files.headers import file_headers
from server_module.formats import XSI, FormatContext
from server_module.formats.http_header import header_element
from server_module.formats.oai_dc import DC, OAI_DC
from server_module.formats.oai_dc import NAMESPACE as OAI_DC_NS
from server_module.formats.premis import facts
from server_module.records import FileRecord

DIDL = "urn:mpeg:mpeg21:2002:02-DIDL-NS"
DII = "urn:mpeg:mpeg21:2002:01-DII-NS"
PRES = "urn:coop-archive:preservation:1.0"
SCHEMA = (
    "http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd"
)


def statement(inner: str) -> str:
    return (
        '<didl:Descriptor><didl:Statement mimeType="application/xml">'
        f"{inner}</didl:Statement></didl:Descriptor>"
    )


def digests_element(sha1: str, sha256: str) -> str:
    return (
        f'<pres:digests xmlns:pres="{PRES}"><pres:digest algorithm="sha1">{sha1}</pres:digest>'
        f'<pres:digest algorithm="sha256">{sha256}</pres:digest></pres:digests>'
    )


def read_inline(record: FileRecord, ctx: FormatContext) -> bytes | None:
    """The file's bytes if small enough and still the indexed version, else None."""
    if record.size > ctx.inline_max:
        return None
    opened = open_public(ctx.docroot, record.relpath, ctx.exclude, ctx.allow_outside)
    if opened is None:
        return None
    handle, _info = opened
    with handle:
        data = handle.read(ctx.inline_max + 1)
    if hashlib.sha256(data).hexdigest() != record.sha256:
        return None
    return data


def component_descriptors(record: FileRecord) -> list[str]:
    """The PREMIS object, then each plugin's output; nothing when no plugin ran."""
    if not record.analyses:
        return []
    return [
        statement(premis_element(facts(record))),
        *(statement(analysis_element(a)) for a in record.analyses),
    ]


class OaiDidl:
    prefix = "oai_didl"
    namespace = DIDL
    schema = SCHEMA

    def render(self, record: FileRecord, ctx: FormatContext) -> str:
        url, mime = attr(record.identifier), attr(record.mime)
        dc = f'<oai_dc:dc xmlns:oai_dc="{OAI_DC_NS}" xmlns:dc="{DC}">'
        parts = [
            f'<didl:DIDL xmlns:didl="{DIDL}" xmlns:dii="{DII}" xmlns:xsi="{XSI}" '
            f'xsi:schemaLocation="{DIDL} {SCHEMA}" DIDLDocumentId="{url}"><didl:Item>',
            statement(f"<dii:Identifier>{text(record.identifier)}</dii:Identifier>"),
            statement(
                header_element(file_headers(record), url=record.identifier, status=(200, "OK"))
            ),
            statement(dc + OAI_DC.dc_elements(record) + "</oai_dc:dc>"),
            statement(digests_element(record.sha1, record.sha256)),
            "<didl:Component>",
            *component_descriptors(record),
            f'<didl:Resource mimeType="{mime}" ref="{url}"/>',
        ]
        data = read_inline(record, ctx)
        if data is not None:
            encoded = pybase64.b64encode_as_string(data)  # base64.b64encode's text, faster
            parts.append(
                f'<didl:Resource mimeType="{mime}" encoding="base64">{encoded}</didl:Resource>'
            )
        parts.append("</didl:Component></didl:Item></didl:DIDL>")
        return "".join(parts)

    def weight(self, record: FileRecord, ctx: FormatContext) -> int:
        inline = record.size * 4 // 3 if record.size <= ctx.inline_max else 0
        outputs = sum(len(a.output) + 600 for a in record.analyses)
        return 2000 + inline + (1500 + outputs if record.analyses else 0)


OAI_DIDL = OaiDidl()
