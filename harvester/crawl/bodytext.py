"""The text of a response body: whether it can hold links, as HTML or CSS, and its characters.

A body is HTML when its media type is ``text/html`` or ``application/xhtml+xml``, or when it has
no media type and starts with one of the HTML signatures of WHATWG MIME Sniffing §7.1; it is CSS
when its media type is ``text/css``; anything else has no links. A body with a NUL in its first
KiB is binary and has no links either, unless a byte order mark or the Content-Type charset says
UTF-16 or UTF-32.

The characters are decoded in Python, so that libxml2's own guess (Latin-1) never applies, by
w3lib (what Scrapy uses), in this order: a byte order mark (``w3lib.encoding.read_bom``), the
Content-Type charset (``http_content_type_encoding``), a declaration in the document, then
UTF-8; undecodable bytes become U+FFFD. Labels are resolved as w3lib resolves them, after the
WHATWG Encoding Standard (``latin1`` is windows-1252; ``utf-7`` and unknown labels are ignored).
The declaration is, for HTML, a ``<meta charset>``, a ``<meta http-equiv=content-type>`` or an
XML declaration before ``<body>`` in the first 4 KiB (``html_body_declared_encoding``, the
WHATWG prescan approximated), and for CSS an ``@charset "...";`` rule that starts the body
(CSS Syntax 3 §3.2). A document that could be read far enough to find its own declaration is
not UTF-16 or UTF-32, so such a declaration means UTF-8 (HTML §13.2.3.2).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
    to_unicode,
)

__all__ = ["CSS_TYPES", "HTML_TYPES", "SNIFF_BYTES", "BodyText", "body_text"]

SNIFF_BYTES = 1024
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
CSS_TYPES = frozenset({"text/css"})

_HTML_SIGNATURE = re.compile(
    rb"[\t\n\f\r ]*<(?:!doctype html|html|head|script|iframe|h1|div|font|table|a|style|title"
    rb"|b|body|br|p|!--)[ >]",
    re.I,
)
_CSS_CHARSET = re.compile(rb'@charset "(?P<label>[^"]{1,40})";')
_WIDE = ("utf-16", "utf-32")


class BodyText(NamedTuple):
    """A body that may hold links: ``kind`` says how to read ``text``."""

    kind: Literal["html", "css"]
    text: str


def body_text(body: bytes, content_type: str | None) -> BodyText | None:
    """The body as HTML or CSS text, or ``None`` when it is neither or is binary.

    >>> body_text('<a href="café">'.encode("latin-1"), "text/html; charset=ISO-8859-1")
    BodyText(kind='html', text='<a href="café">')
    >>> body_text(b"GIF89a\\x00<a>", "text/html"), body_text(b"<a>", "image/png")
    (None, None)
    """
    media_type = (content_type or "").partition(";")[0].strip().lower()
    if media_type in HTML_TYPES or (not media_type and _sniffs_as_html(body)):
        kind: Literal["html", "css"] = "html"
        declared: Callable[[bytes], str | None] = html_body_declared_encoding
    elif media_type in CSS_TYPES:
        kind, declared = "css", _css_declared_encoding
    else:
        return None
    charset = http_content_type_encoding(content_type)
    if _is_binary(body, charset):
        return None
    return BodyText(kind, _decode(body, charset, declared))


def _sniffs_as_html(body: bytes) -> bool:
    """WHATWG MIME Sniffing's HTML signatures, for a body without a Content-Type.

    >>> _sniffs_as_html(b"\\n<!DOCTYPE html>"), _sniffs_as_html(b"GIF89a<a>")
    (True, False)
    """
    head = body[:SNIFF_BYTES].removeprefix(codecs.BOM_UTF8)
    return _HTML_SIGNATURE.match(head) is not None


def _is_binary(body: bytes, charset: str | None) -> bool:
    """A NUL in the first KiB means binary, unless a BOM or ``charset`` says UTF-16/32."""
    head = body[:SNIFF_BYTES]
    if b"\x00" not in head:
        return False
    encoding = read_bom(head)[0] or charset
    return not (encoding and encoding.startswith(_WIDE))


def _decode(body: bytes, charset: str | None, declared: Callable[[bytes], str | None]) -> str:
    """BOM, then the Content-Type charset, then the document's declaration, then UTF-8."""
    encoding, bom = read_bom(body)
    if encoding is not None and bom is not None:
        return to_unicode(body[len(bom) :], encoding)
    if charset is None and (charset := declared(body)) and charset.startswith(_WIDE):
        charset = "utf-8"
    return to_unicode(body, charset or "utf-8")


def _css_declared_encoding(body: bytes) -> str | None:
    """The encoding of an ``@charset`` rule at the very start of a style sheet.

    >>> _css_declared_encoding(b'@charset "ISO-8859-1"; a {}'), _css_declared_encoding(b"a {}")
    ('cp1252', None)
    """
    match = _CSS_CHARSET.match(body)
    return resolve_encoding(match["label"].decode("ascii", "replace")) if match else None
