"""``http_header``: the headers a GET of the item's URL returns, in this project's own schema
(``schemas/http_header.xsd``), as mod_oai offered them."""

from __future__ import annotations

from collections.abc import Iterable

from coop_common.xmltext import attr, text
from server_module.files.headers import file_headers
from server_module.formats import XSI, FormatContext, schema_url
from server_module.records import FileRecord

NAMESPACE = "urn:coop-archive:http-header:1.0"


def header_element(
    fields: Iterable[tuple[str, str]],
    *,
    url: str | None = None,
    status: tuple[int, str] | None = None,
    schema_location: str | None = None,
) -> str:
    """An ``http:header`` element; shared by this format and the DIDL descriptors."""
    attrs = f' url="{attr(url)}"' if url else ""
    if schema_location:
        attrs += f' xmlns:xsi="{XSI}" xsi:schemaLocation="{NAMESPACE} {attr(schema_location)}"'
    parts = [f'<http:header xmlns:http="{NAMESPACE}"{attrs}>']
    if status:
        parts.append(f'<http:status code="{status[0]}">{text(status[1])}</http:status>')
    parts += [f'<http:field name="{attr(n)}">{text(v)}</http:field>' for n, v in fields]
    parts.append("</http:header>")
    return "".join(parts)


class HttpHeader:
    prefix = "http_header"
    namespace = NAMESPACE
    schema = "http_header.xsd"  # served by the provider (schemas/)

    def render(self, record: FileRecord, ctx: FormatContext) -> str:
        return header_element(
            file_headers(record),
            url=record.identifier,
            status=(200, "OK"),
            schema_location=schema_url(self, ctx),
        )

    def weight(self, record: FileRecord, ctx: FormatContext) -> int:
        return 500


HTTP_HEADER = HttpHeader()
