"""OAI-PMH 2.0 response documents as bytes (spec §3.2 XML response format, §4 verbs).

Sans-IO: functions of values in, UTF-8 bytes out. Templates are plain strings because a
ListIdentifiers page is thousands of near-identical headers, and every value goes through
:mod:`coop_common.xmltext`. Tests validate every shape against ``OAI-PMH.xsd``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from coop_common.xmltext import attr, is_plain, text
from server_module.oai.dates import format_datestamp
from server_module.oai.errors import OAIError
from server_module.records import mime_for_set_spec, set_specs_for

OAI_NS = "http://www.openarchives.org/OAI/2.0/"
OAI_SCHEMA = "http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
_END = "</OAI-PMH>\n"


@dataclass(frozen=True)
class Envelope:
    """What every response carries: when, for which endpoint, and the browser stylesheet."""

    response_date: int
    endpoint_url: str
    stylesheet_url: str | None = None


@dataclass(frozen=True)
class RepositoryDescription:
    """The Identify answer (§4.2)."""

    name: str
    base_url: str
    admin_emails: Sequence[str]
    earliest_datestamp: int
    compression: Sequence[str] = ("gzip", "deflate")


Body = str | list[str | bytes]
"""A verb's response body: one string, or a list page's parts. Parts are joined once, with the
envelope, because a page runs to megabytes and every copy of it costs (fresh pages of memory).
A part already encoded (bytes) is passed on as it is: one made once for many responses."""


def document(env: Envelope, echo: Iterable[tuple[str, str]], body: Body) -> bytes:
    """The whole response: XML declaration, stylesheet, envelope, ``request`` echo, body."""
    return b"".join(document_parts(env, echo, body))


def document_parts(env: Envelope, echo: Iterable[tuple[str, str]], body: Body) -> list[bytes]:
    """:func:`document` in parts that join into it: each bytes part of the body as it is (the
    same object), and the text between them encoded, each run of it as one part."""
    head = _head(env, echo)
    if isinstance(body, str):
        return [(head + body + _END).encode()]
    parts: list[bytes] = []
    run = [head]
    for part in body:
        if isinstance(part, bytes):
            parts += ["".join(run).encode(), part]
            run = []
        else:
            run.append(part)
    run.append(_END)
    parts.append("".join(run).encode())
    return parts


def _head(env: Envelope, echo: Iterable[tuple[str, str]]) -> str:
    pi = (
        f'<?xml-stylesheet type="text/xsl" href="{attr(env.stylesheet_url)}"?>\n'
        if env.stylesheet_url
        else ""
    )
    attrs = "".join(f' {name}="{attr(value)}"' for name, value in echo)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'{pi}<OAI-PMH xmlns="{OAI_NS}" xmlns:xsi="{XSI}" '
        f'xsi:schemaLocation="{OAI_NS} {OAI_SCHEMA}">'
        f"<responseDate>{format_datestamp(env.response_date)}</responseDate>"
        f"<request{attrs}>{text(env.endpoint_url)}</request>"
    )


def errors_body(errors: Sequence[OAIError]) -> str:
    return "".join(f'<error code="{e.code}">{text(str(e))}</error>' for e in errors)


def verb_body(verb: str, inner: str) -> str:
    return f"<{verb}>{inner}</{verb}>"


def list_body(verb: str, items: Sequence[str | bytes], token: str) -> list[str | bytes]:
    """A page of a list verb (§4.3, §4.4, §4.5) in parts: its items, then its resumptionToken."""
    return [f"<{verb}>", *items, token, f"</{verb}>"]


@lru_cache(maxsize=4096)
def _set_elements(mime: str) -> str:
    return "".join(f"<setSpec>{text(spec)}</setSpec>" for spec in set_specs_for(mime))


@lru_cache(maxsize=65536)
def _datestamp(epoch: int) -> str:
    return format_datestamp(epoch)


_OPEN = "<header><identifier>"
_OPEN_DELETED = '<header status="deleted"><identifier>'


@lru_cache(maxsize=8192)
def _header_tail(datestamp: int, mime: str) -> str:
    """A header after its identifier: shared by every item of one second and one type."""
    sets = _set_elements(mime)
    return f"</identifier><datestamp>{_datestamp(datestamp)}</datestamp>{sets}</header>"


def header(identifier: str, datestamp: int, deleted: int | bool, mime: str) -> str:
    """One record header (§2.5); identifiers are ASCII URLs but are escaped all the same."""
    opening = _OPEN_DELETED if deleted else _OPEN
    return opening + text(identifier) + _header_tail(datestamp, mime)


def headers(rows: Sequence[tuple[str, int, int, str]]) -> list[str]:
    """Many headers at once, one string each: the ListIdentifiers hot path.

    The page's identifiers are checked for escaping together, in one pass: they are
    percent-encoded URLs, so usually none needs it and each is copied as it is.
    """
    identifiers = [row[0] for row in rows]
    if not is_plain("".join(identifiers)):
        identifiers = [text(identifier) for identifier in identifiers]
    return [
        (_OPEN_DELETED if deleted else _OPEN) + identifier + _header_tail(datestamp, mime)
        for identifier, (_, datestamp, deleted, mime) in zip(identifiers, rows, strict=True)
    ]


def record(header_xml: str, metadata: str | None) -> str:
    """A record (§2.5): deleted records carry no metadata."""
    inner = f"<metadata>{metadata}</metadata>" if metadata is not None else ""
    return f"<record>{header_xml}{inner}</record>"


def resumption_token(token: str, total: int, cursor: int, expires: int | None) -> str:
    """§3.5: an empty token marks the last page of an incomplete list."""
    exp = f' expirationDate="{format_datestamp(expires)}"' if expires is not None and token else ""
    return (
        f'<resumptionToken completeListSize="{total}" cursor="{cursor}"{exp}>'
        f"{text(token)}</resumptionToken>"
    )


def identify_body(desc: RepositoryDescription) -> str:
    emails = "".join(f"<adminEmail>{text(e)}</adminEmail>" for e in desc.admin_emails)
    compression = "".join(f"<compression>{text(c)}</compression>" for c in desc.compression)
    return verb_body(
        "Identify",
        f"<repositoryName>{text(desc.name)}</repositoryName>"
        f"<baseURL>{text(desc.base_url)}</baseURL>"
        "<protocolVersion>2.0</protocolVersion>"
        f"{emails}"
        f"<earliestDatestamp>{format_datestamp(desc.earliest_datestamp)}</earliestDatestamp>"
        "<deletedRecord>persistent</deletedRecord>"
        "<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>"
        f"{compression}",
    )


def metadata_formats_body(formats: Iterable[tuple[str, str, str]]) -> str:
    """``(prefix, schema URL, namespace)`` triples (§4.4)."""
    inner = "".join(
        f"<metadataFormat><metadataPrefix>{text(p)}</metadataPrefix>"
        f"<schema>{text(s)}</schema><metadataNamespace>{text(n)}</metadataNamespace>"
        "</metadataFormat>"
        for p, s, n in formats
    )
    return verb_body("ListMetadataFormats", inner)


def set_name(spec: str) -> str:
    """The set's name, with the MIME type as it is written (``+``, not the setSpec's ``~``).

    >>> set_name("text"), set_name("image:svg~xml")
    ('Files of MIME type text/*', 'Files of MIME type image/svg+xml')
    """
    major, mime = mime_for_set_spec(spec)
    return f"Files of MIME type {mime or major + '/*'}"


def sets_body(specs: Iterable[str]) -> str:
    inner = "".join(
        f"<set><setSpec>{text(s)}</setSpec><setName>{text(set_name(s))}</setName></set>"
        for s in specs
    )
    return verb_body("ListSets", inner)
