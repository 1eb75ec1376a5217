"""``premis``: a file as a PREMIS 3 object, with the plugin runs that described it
(:mod:`coop_common.premis` renders it; ``oai_didl`` carries the same element)."""

from __future__ import annotations

from coop_common.premis import NAMESPACE, SCHEMA, FileFacts, premis_element
from server_module.formats import FormatContext
from server_module.records import FileRecord


def facts(record: FileRecord) -> FileFacts:
    return FileFacts(
        record.identifier,
        record.sha1,
        record.sha256,
        record.size,
        record.mime,
        "the file name",
        record.analyses,
    )


class Premis:
    prefix = "premis"
    namespace = NAMESPACE
    schema = SCHEMA

    def render(self, record: FileRecord, ctx: FormatContext) -> str:
        return premis_element(facts(record))

    def weight(self, record: FileRecord, ctx: FormatContext) -> int:
        return 1500 + 900 * len(record.analyses)


PREMIS = Premis()
