"""``oai_dc``: simple Dublin Core for a file (OAI-PMH §6.2, the format every item must offer).

title: the HTML ``<title>``, else the file name; identifier: the URL; format: the MIME type and
the extent in bytes; date: the last modification (day); type: the DCMI type of the MIME major.
"""

from __future__ import annotations

import os
import posixpath
import time

from coop_common.xmltext import text
from server_module.formats import XSI, FormatContext
from server_module.records import FileRecord

NAMESPACE = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC = "http://purl.org/dc/elements/1.1/"
SCHEMA = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
DCMI_TYPES = {
    "text": "Text",
    "image": "StillImage",
    "audio": "Sound",
    "video": "MovingImage",
    "model": "PhysicalObject",
    "font": "Software",
}


def title_of(record: FileRecord) -> str:
    if record.title:
        return record.title
    return os.fsdecode(posixpath.basename(record.relpath))


def dcmi_type(mime: str) -> str:
    """
    >>> dcmi_type("image/png"), dcmi_type("application/pdf"), dcmi_type("text/html")
    ('StillImage', 'Text', 'Text')
    """
    major = mime.partition("/")[0]
    if mime in ("application/pdf", "application/msword", "application/xhtml+xml"):
        return "Text"
    return DCMI_TYPES.get(major, "Dataset")


class OaiDc:
    prefix = "oai_dc"
    namespace = NAMESPACE
    schema = SCHEMA

    def dc_elements(self, record: FileRecord) -> str:
        """The Dublin Core elements alone, for embedding (the DIDL format reuses them)."""
        day = time.strftime("%Y-%m-%d", time.gmtime(record.mtime_ns // 1_000_000_000))
        return (
            f"<dc:title>{text(title_of(record))}</dc:title>"
            f"<dc:identifier>{text(record.identifier)}</dc:identifier>"
            f"<dc:format>{text(record.mime)}</dc:format>"
            f"<dc:format>{record.size} bytes</dc:format>"
            f"<dc:date>{day}</dc:date>"
            f"<dc:type>{dcmi_type(record.mime)}</dc:type>"
        )

    def render(self, record: FileRecord, ctx: FormatContext) -> str:
        return (
            f'<oai_dc:dc xmlns:oai_dc="{NAMESPACE}" xmlns:dc="{DC}" xmlns:xsi="{XSI}" '
            f'xsi:schemaLocation="{NAMESPACE} {SCHEMA}">{self.dc_elements(record)}</oai_dc:dc>'
        )

    def weight(self, record: FileRecord, ctx: FormatContext) -> int:
        return 600


OAI_DC = OaiDc()
