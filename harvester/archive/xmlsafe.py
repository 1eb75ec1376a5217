"""Values made safe for XML text, attributes and ``xs:anyURI``, for the DIDL records.

Any string can be given: characters XML 1.0 forbids are dropped, markup is escaped exactly as
lxml's serialiser escapes it (so the records are the bytes lxml would write), and a value that
is not an RFC 3986 URI reference is percent-encoded until it is one.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import quote

__all__ = ["attr", "text", "uri", "xml_text"]

log = logging.getLogger(__name__)

# XML 1.0 section 2.2, Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# What needs work in element content: the above, and "&", "<", ">" and CR (which parsing
# would turn into LF); attribute values also escape '"', tab and LF (which parsing would
# turn into spaces).
_TEXT_SPECIAL = re.compile(
    "[^\t\n\x20-\x25\x27-\x3b\x3d\x3f-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_ATTR_SPECIAL = re.compile(
    "[^\x20\x21\x23-\x25\x27-\x3b\x3d\x3f-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)

# An RFC 3986 URI-reference (section 4.1), slightly narrowed where libxml2's xs:anyURI check
# is stricter than the RFC: a port needs digits and must fit in an int.
_CHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
_PCHAR = rf"(?:{_CHAR}|[:@])"
_AUTHORITY = rf"(?:(?:{_CHAR}|:)*@)?(?:\[[0-9A-Fa-f:.]+\]|{_CHAR}*)(?::[0-9]{{1,9}})?"
_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*:"
_NETWORK_OR_ABSOLUTE = rf"//{_AUTHORITY}{_PATH_ABEMPTY}|/(?:{_PCHAR}+{_PATH_ABEMPTY})?"
_QUERY_CHARS = rf"(?:{_PCHAR}|[/?])*"
_URI_REFERENCE = re.compile(
    rf"(?:{_SCHEME}(?:{_NETWORK_OR_ABSOLUTE}|{_PCHAR}+{_PATH_ABEMPTY})?"  # URI
    rf"|(?:{_NETWORK_OR_ABSOLUTE}|(?:{_CHAR}|@)+{_PATH_ABEMPTY})?)"  # relative reference
    rf"(?:\?{_QUERY_CHARS})?(?:\#{_QUERY_CHARS})?"
)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_URI_SAFE = "!$&'()*+,/:;=?@~%"


def xml_text(value: str) -> str:
    """``value`` without the characters XML 1.0 cannot hold at all."""
    return _INVALID.sub("", value)


def text(value: str) -> str:
    r"""``value`` as element content: XML-safe, with ``&``, ``<``, ``>`` and CR escaped.

    >>> text("a < b && c >\r\n]]>\x00")
    'a &lt; b &amp;&amp; c &gt;&#13;\n]]&gt;'
    """
    if _TEXT_SPECIAL.search(value) is None:
        return value
    escaped = xml_text(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace("\r", "&#13;")


def attr(value: str) -> str:
    r"""``value`` as a double-quoted attribute value; escaped whitespace survives parsing.

    >>> attr('say "<&>"\t\r\n\ud800')
    'say &quot;&lt;&amp;&gt;&quot;&#9;&#13;&#10;'
    """
    if _ATTR_SPECIAL.search(value) is None:
        return value
    escaped = text(value).replace('"', "&quot;")
    return escaped.replace("\t", "&#9;").replace("\n", "&#10;")


def uri(value: str) -> str:
    """``value`` as an ``xs:anyURI`` that both RFC 3986 and libxml2 accept.

    An RFC 3986 reference is kept as it is. Otherwise characters a URI cannot hold are
    percent-encoded (as RFC 3987, section 3.1 maps an IRI to a URI), and if that is still
    not a URI reference the whole value is; unquoting gives the original back.
    """
    value = xml_text(value)
    if _URI_REFERENCE.fullmatch(value):
        return value
    head, hash_mark, fragment = _BAD_PERCENT.sub("%25", value).partition("#")
    escaped = quote(head, safe=_URI_SAFE) + hash_mark + quote(fragment, safe=_URI_SAFE)
    if _URI_REFERENCE.fullmatch(escaped):
        return escaped
    log.debug("percent-encoding all of %r to make it an xs:anyURI", value)
    return quote(value, safe="")
