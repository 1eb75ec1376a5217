"""The endpoint's answer as an HTML page, for a person who opens it in a browser.

Browsers are removing client-side XSLT (Chromium covers a page that uses it with a banner
saying so), so a browser no longer gets the XML with ``static/oai2.xsl`` to apply: when its
``Accept`` field prefers ``text/html`` to XML (:func:`wants_html`; every browser's default
does, no OAI-PMH client's does), the view sends this page instead, made here from the very
response document an OAI-PMH client gets. It holds the stylesheet's tables: Identify's
fields, the formats, the sets (each linking to its list), and a list's items, each linking to
its file and to its record (GetRecord), and to the list's next page.

Sans-IO: the document's bytes in, the page's bytes out; every value is escaped by
:mod:`html`, and every value put in a link's query by :func:`urllib.parse.quote`.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from urllib.parse import quote

from lxml import etree

__all__ = ["html_page", "wants_html"]

OAI = "{http://www.openarchives.org/OAI/2.0/}"
DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
LIST_VERBS = ("ListIdentifiers", "ListRecords", "GetRecord")
STYLE = """body { font-family: sans-serif; margin: 2em; max-width: 70em; }
table { border-collapse: collapse; width: 100%; }
td, th { border-bottom: 1px solid #ddd; padding: .3em .6em; text-align: left; }
.error { color: #a00; } .deleted { color: #888; text-decoration: line-through; }
nav a { margin-right: 1em; }"""
NAV = [
    ("Identify", "?verb=Identify"),
    ("Formats", "?verb=ListMetadataFormats"),
    ("Sets", "?verb=ListSets"),
    ("Identifiers", "?verb=ListIdentifiers&metadataPrefix=oai_dc"),
    ("Records", "?verb=ListRecords&metadataPrefix=oai_dc"),
]
HTML_TYPES = ("text/html", "application/xhtml+xml")
XML_TYPES = ("text/xml", "application/xml")


def wants_html(accepted: Iterable[tuple[str, float]]) -> bool:
    """Whether an ``Accept`` field (its media ranges with their quality values) names HTML
    and prefers it to XML; ``*/*`` alone, or a tie, keeps the XML.

    >>> browser = [("text/html", 1), ("application/xml", 0.9), ("*/*", 0.8)]
    >>> tie = [("text/html", 1), ("text/xml", 1)]
    >>> wants_html(browser), wants_html([("*/*", 1)]), wants_html(tie)
    (True, False, False)
    """
    listed = {kind.lower(): quality for kind, quality in accepted}
    html = max((listed.get(kind, 0.0) for kind in HTML_TYPES), default=0.0)
    xml = max((listed.get(kind, 0.0) for kind in XML_TYPES), default=0.0)
    return html > 0 and html > xml


def html_page(document: bytes) -> bytes:
    """The page for one OAI-PMH response document."""
    root = etree.fromstring(document)
    verb = root.find(f"{OAI}request").get("verb") or ""
    body = [f"<h1>OAI-PMH: {escape(verb)}</h1>", _nav()]
    body.append(f"<p>Response date: {escape(root.findtext(f'{OAI}responseDate') or '')}</p>")
    for element in root:
        if element.tag in (f"{OAI}responseDate", f"{OAI}request"):
            continue
        body.append(_part(element, verb))
    page = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>OAI-PMH {escape(verb)}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
    return page.encode()


def _nav() -> str:
    links = "".join(f'<a href="{escape(href)}">{name}</a>' for name, href in NAV)
    return f"<nav>{links}</nav>"


def _part(element: etree._Element, verb: str) -> str:
    name = etree.QName(element).localname
    if name == "error":
        code, message = escape(element.get("code") or ""), escape(element.text or "")
        return f'<p class="error">Error <b>{code}</b>: {message}</p>'
    if name == "Identify":
        named = [(etree.QName(child).localname, "".join(child.itertext())) for child in element]
        return _table(None, [[escape(key), escape(value)] for key, value in named])
    if name == "ListMetadataFormats":
        fields = ("metadataPrefix", "schema", "metadataNamespace")
        rows = [[escape(f.findtext(OAI + n) or "") for n in fields] for f in element]
        return _table(("prefix", "schema", "namespace"), rows)
    if name == "ListSets":
        return _table(("setSpec", "name"), [_set_row(s) for s in element.iter(f"{OAI}set")])
    if name in LIST_VERBS:
        return _items(element, verb)
    return ""


def _set_row(element: etree._Element) -> list[str]:
    spec = element.findtext(f"{OAI}setSpec") or ""
    href = f"?verb=ListIdentifiers&metadataPrefix=oai_dc&set={quote(spec, safe='')}"
    name = element.findtext(f"{OAI}setName") or ""
    return [f'<a href="{escape(href)}">{escape(spec)}</a>', escape(name)]


def _items(element: etree._Element, verb: str) -> str:
    rows, classes = [], []
    for item in element:
        header = item if item.tag == f"{OAI}header" else item.find(f"{OAI}header")
        if header is None:
            continue
        identifier = header.findtext(f"{OAI}identifier") or ""
        record = f"?verb=GetRecord&metadataPrefix=oai_dc&identifier={quote(identifier, safe='')}"
        sets = " ".join(s.text or "" for s in header.iter(f"{OAI}setSpec"))
        title = next(item.iter(DC_TITLE), None)
        rows.append(
            [
                f'<a href="{escape(identifier)}">{escape(identifier)}</a>',
                escape(header.findtext(f"{OAI}datestamp") or ""),
                escape(sets),
                escape("" if title is None else title.text or ""),
                f'<a href="{escape(record)}">record</a>',
            ]
        )
        classes.append("deleted" if header.get("status") == "deleted" else "")
    table = _table(("identifier", "datestamp", "sets", "title", ""), rows, classes)
    token = element.find(f"{OAI}resumptionToken")
    return table + ("" if token is None else _next(token, verb))


def _next(token: etree._Element, verb: str) -> str:
    cursor, size = token.get("cursor"), token.get("completeListSize")
    shown = f"Shown from item {int(cursor) + 1} of {escape(size or '?')}. " if cursor else ""
    if not token.text:
        return f"<p>{shown}</p>"
    href = f"?verb={quote(verb)}&resumptionToken={quote(token.text, safe='')}"
    return f'<p>{shown}<a href="{escape(href)}" rel="next">Next page</a></p>'


def _table(
    heads: tuple[str, ...] | None, rows: list[list[str]], classes: list[str] | None = None
) -> str:
    out = ["<table>"]
    if heads is not None:
        out.append("<tr>" + "".join(f"<th>{head}</th>" for head in heads) + "</tr>")
    for i, cells in enumerate(rows):
        kind = classes[i] if classes else ""
        attr = f' class="{kind}"' if kind else ""
        if heads is None:  # a field per row: its name, then its value
            out.append(f"<tr{attr}><th>{cells[0]}</th><td>{cells[1]}</td></tr>")
        else:
            out.append(f"<tr{attr}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    out.append("</table>")
    return "".join(out)
