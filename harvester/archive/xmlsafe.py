"""Values made safe for ``xs:anyURI``, for the DIDL records; text and attribute values are
:mod:`coop_common.xmltext`'s, re-exported here for the record builder.

Any string can be given: characters XML 1.0 forbids are dropped, and a value that is not an
RFC 3986 URI reference is percent-encoded until it is one.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import quote

from coop_common.xmltext import attr, clean, text

__all__ = ["attr", "text", "uri"]

log = logging.getLogger(__name__)

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


def uri(value: str) -> str:
    """``value`` as an ``xs:anyURI`` that both RFC 3986 and libxml2 accept.

    An RFC 3986 reference is kept as it is. Otherwise characters a URI cannot hold are
    percent-encoded (as RFC 3987, section 3.1 maps an IRI to a URI), and if that is still
    not a URI reference the whole value is; unquoting gives the original back.
    """
    value = clean(value)
    if _URI_REFERENCE.fullmatch(value):
        return value
    head, hash_mark, fragment = _BAD_PERCENT.sub("%25", value).partition("#")
    escaped = quote(head, safe=_URI_SAFE) + hash_mark + quote(fragment, safe=_URI_SAFE)
    if _URI_REFERENCE.fullmatch(escaped):
        return escaped
    log.debug("percent-encoding all of %r to make it an xs:anyURI", value)
    return quote(value, safe="")
