"""Any string made safe for XML 1.0 text and attribute values, for both the provider's
string-built responses and the harvester's DIDL records.

Characters XML 1.0 cannot hold at all are dropped (a file name may hold any byte but ``/`` and
NUL, and a title anything a web page contains); markup is escaped exactly as lxml's serialiser
escapes it, so string-built documents are the bytes lxml would write. Printable ASCII, which
every identifier is (they are percent-encoded URLs), takes a fast path of plain replacements.
"""

from __future__ import annotations

import functools
import re

from lxml import etree

__all__ = ["attr", "clean", "has_invalid", "is_any_uri", "is_plain", "text"]

# XML 1.0 section 2.2, Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Element content escapes "&", "<", ">" and CR (which parsing would turn into LF); attribute
# values also '"', tab and LF (which parsing would turn into spaces).
_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTR = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\t": "&#9;",
        "\n": "&#10;",
        "\r": "&#13;",
    }
)
# The ASCII that :func:`text` leaves as it is: tab, LF, and the printable rest but ``& < >``.
_PLAIN_BYTES = bytes(b for b in range(0x80) if b in b"\t\n" or (b >= 0x20 and b not in b"&<>"))


def clean(value: str) -> str:
    r"""``value`` without the characters XML 1.0 cannot hold at all.

    >>> clean("a\x00b\x1fc\ufffe\ud800")
    'abc'
    """
    return _INVALID.sub("", value)


def has_invalid(value: str) -> bool:
    r"""Whether ``value`` holds a character XML 1.0 cannot hold.

    >>> has_invalid("caf\xe9\t"), has_invalid("a\x0bb")
    (False, True)
    """
    return _INVALID.search(value) is not None


def text(value: str) -> str:
    r"""``value`` as element content: XML-safe, with ``&``, ``<``, ``>`` and CR escaped.

    >>> text('<a & "b">'), text("a < b && c >\r\n]]>\x00"), text("caf\xe9 <\x01>")
    ('&lt;a &amp; "b"&gt;', 'a &lt; b &amp;&amp; c &gt;&#13;\n]]&gt;', 'café &lt;&gt;')
    """
    if value.isascii() and value.isprintable():
        return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return clean(value).translate(_TEXT)


def attr(value: str) -> str:
    r"""``value`` as a double-quoted attribute value; escaped whitespace survives parsing.

    >>> attr('say "<&>"\t\r\n\ud800')
    'say &quot;&lt;&amp;&gt;&quot;&#9;&#13;&#10;'
    """
    if value.isascii() and value.isprintable():
        escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return escaped.replace('"', "&quot;")
    return clean(value).translate(_ATTR)


def is_plain(value: str) -> bool:
    r"""Whether ``value`` is ASCII that :func:`text` returns unchanged (identifiers are).

    One pass in C, so a page of identifiers can be checked at once, joined, instead of each
    being escaped. False says only that :func:`text` is needed.

    >>> is_plain("http://h/a%20b?c=d"), is_plain("a&b"), is_plain("caf\xe9"), is_plain("a\r")
    (True, False, False, False)
    """
    return value.isascii() and not value.encode("ascii").translate(None, _PLAIN_BYTES)


def is_any_uri(value: str) -> bool:
    """Whether ``value`` is an ``xs:anyURI`` as libxml2's schema validation reads one: what an
    OAI-PMH identifier echoed in a response must be (``identifierType``).

    >>> is_any_uri("http://h/a%20b"), is_any_uri("oai:repo:1"), is_any_uri(":")
    (True, True, False)
    """
    element = etree.Element("u")
    element.text = value
    return bool(_any_uri_schema().validate(element))


@functools.cache
def _any_uri_schema() -> etree.XMLSchema:
    schema = (
        b'<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
        b'<xs:element name="u" type="xs:anyURI"/></xs:schema>'
    )
    return etree.XMLSchema(etree.fromstring(schema))
