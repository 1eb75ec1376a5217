"""Canonical URLs: one resource, one key, wherever a URL is compared or stored.

``canonicalize`` is the only way the crawl makes a URL a key: its seeds, its extracted links,
its frontier and seen-set, and its scope checks (through ``host_of``) all use it. The OAI-PMH
path does not canonicalise: a listed resource is keyed and fetched by its OAI identifier
exactly as the provider wrote it (stripped of surrounding white space), since mod_oai's
identifier is the resource's URL. ``canonicalize`` applies the normalisations of RFC 3986
§6.2.2 and §6.2.3 and of RFC 9110 §4.2.3 (``http`` and ``https`` only):

1. the reference is split (RFC 3986 Appendix B) and resolved against a base (§5.2.2, with
   the non-strict reading that ``http:g`` is relative, as ``urllib.parse.urljoin`` has it);
2. scheme and host are lower-cased; a non-ASCII host is IDNA-encoded (UTS #46 through the
   ``idna`` package, the standard library's IDNA 2003 codec as a fallback); trailing dots are
   dropped from the host; an IPv6 literal is written in its compressed form;
3. the default port (80, 443) and the userinfo are dropped. Credentials do not name a different
   resource and must not end up in keys, logs or WARC headers;
4. percent-encoding is normalised: escapes of unreserved characters are decoded, all other
   escapes keep their octet and get upper-case hex (so ``%2F``, ``%3F``, ``%25`` and octets that
   are not UTF-8, such as ``%E9``, stay as they are), and characters that may not appear in the
   component are encoded as UTF-8 octets;
5. dot segments are removed (§5.2.4) and an empty path becomes ``/``;
6. the fragment and an empty query (a bare ``?``) are dropped; the query otherwise keeps its
   parameters and their order.

Resolution follows RFC 3986, not the WHATWG URL standard: a backslash is an ordinary character
(encoded as ``%5C``), not a path separator, and non-ASCII query text is always encoded as UTF-8.

Crawler traps in canonical URLs are :mod:`harvester.crawl.traps`'s concern.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

try:
    import idna as _idna
except ImportError:  # pragma: no cover - idna comes with requests, but is not required
    _idna = None  # type: ignore[assignment]

__all__ = ["canonicalize", "host_of", "host_of_canonical", "is_in_scope"]

DEFAULT_PORTS = {"http": 80, "https": 443}

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_SAFE = "".join(sorted(_UNRESERVED)) + "!$&'()*+,;=" + ":@/"
_QUERY_SAFE = _PATH_SAFE + "?"


def _escape_pattern(safe: str) -> re.Pattern[str]:
    """An escape, or one character that ``safe`` does not allow."""
    allowed = "".join(re.escape(char) for char in safe)
    return re.compile(rf"%[0-9A-Fa-f]{{2}}|[^{allowed}]")


_PATH_ESCAPES = _escape_pattern(_PATH_SAFE)
_QUERY_ESCAPES = _escape_pattern(_QUERY_SAFE)
_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_PORT = re.compile(r"[0-9]*")
# Leading and trailing C0 controls and spaces are stripped, tabs and newlines removed, as a
# browser does with an attribute value.
_EDGE_JUNK = "".join(chr(code) for code in range(0x21))
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
# RFC 3986 Appendix B, with the scheme syntax of §3.1 so that "1a:b" is a relative path.
_URI_REFERENCE = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#.*)?", re.S
)


class _Reference(NamedTuple):
    """The parts of a URI reference that a canonical URL keeps; ``None`` when absent."""

    scheme: str | None
    authority: str | None
    path: str
    query: str | None


def canonicalize(url: str, base: str | None = None) -> str:
    """The canonical form of ``url``, resolved against ``base`` when given.

    Raises ``ValueError`` for anything that is not an ``http`` or ``https`` URL with a host.

    >>> canonicalize("HTTP://Example.COM:80/a/./b/../c%7e?q=1#frag")
    'http://example.com/a/c~?q=1'
    >>> canonicalize("../d e?x=%2f&y=é", base="https://h.example/a/b/c")
    'https://h.example/a/d%20e?x=%2F&y=%C3%A9'
    >>> canonicalize("//user:pw@bücher.de./%E9")
    Traceback (most recent call last):
    ...
    ValueError: not an http(s) URL: '//user:pw@bücher.de./%E9'
    >>> canonicalize("//user:pw@bücher.de./%E9", base="https://x/")
    'https://xn--bcher-kva.de/%E9'
    >>> canonicalize("mailto:someone@example.com")
    Traceback (most recent call last):
    ...
    ValueError: not an http(s) URL: 'mailto:someone@example.com'
    """
    parts = _split(url)
    if base is not None:
        parts = _resolve(parts, _split_base(base))
    scheme = (parts.scheme or "").lower()
    if scheme not in DEFAULT_PORTS or parts.authority is None:
        raise ValueError(f"not an http(s) URL: {url!r}")
    authority = _authority(parts.authority, scheme)
    path = _remove_dot_segments(_normalize_escapes(parts.path, _PATH_ESCAPES) or "/")
    if not parts.query:
        return f"{scheme}://{authority}{path}"
    return f"{scheme}://{authority}{path}?{_normalize_escapes(parts.query, _QUERY_ESCAPES)}"


def host_of(url: str) -> str:
    """The canonical host of ``url``, without port or IPv6 brackets; ``ValueError`` as above.

    >>> host_of("https://WWW.Example.org:8443/x")
    'www.example.org'
    >>> host_of("http://[2001:DB8::0:1]/")
    '2001:db8::1'
    """
    host = urlsplit(canonicalize(url)).hostname
    if host is None:  # canonicalize refuses such a URL first
        raise ValueError(f"no host in {url!r}")
    return host


def host_of_canonical(url: str) -> str:
    """``host_of`` for a URL that ``canonicalize`` made, read off its authority rather than
    parsed again (a canonical authority has no userinfo and a lower-case host); ``ValueError``
    for a string with no ``://``.

    >>> host_of_canonical("https://www.example.org:8443/x?y=http://z/")
    'www.example.org'
    >>> host_of_canonical("http://[2001:db8::1]:8080/")
    '2001:db8::1'
    """
    authority = url[url.index("://") + 3 :].partition("/")[0]
    if authority.startswith("["):
        return authority[1 : authority.index("]")]
    return authority.partition(":")[0]


def is_in_scope(url: str, hosts: frozenset[str]) -> bool:
    """Whether ``url`` is on one of ``hosts`` (canonical, as ``host_of`` gives them).

    Hosts match exactly: neither subdomains nor ports widen the scope. A URL that cannot be
    canonicalised is out of scope.

    >>> is_in_scope("HTTP://Example.com:8080/a", frozenset({"example.com"}))
    True
    >>> is_in_scope("http://www.example.com/", frozenset({"example.com"}))
    False
    >>> is_in_scope("javascript:void(0)", frozenset({"example.com"}))
    False
    """
    try:
        return host_of(url) in hosts
    except ValueError:
        return False


def _split(url: str) -> _Reference:
    """A reference's parts, after dropping surrounding controls and spaces, tabs and newlines.

    >>> _split(" \\thttp://a/\\nb?#f \\x00")
    _Reference(scheme='http', authority='a', path='/b', query='')
    """
    url = url.strip(_EDGE_JUNK)
    if "\t" in url or "\n" in url or "\r" in url:
        url = _TAB_NEWLINE.sub("", url)
    match = _URI_REFERENCE.match(url)
    if match is None:  # every string matches RFC 3986's Appendix B
        raise ValueError(f"not a URI reference: {url!r}")
    return _Reference._make(match.groups())


_split_base = lru_cache(maxsize=64)(_split)  # a page resolves all its links against one base


def _resolve(reference: _Reference, base: _Reference) -> _Reference:
    """RFC 3986 §5.2.2, leaving dot segments to ``canonicalize``.

    >>> _resolve(_split("../g?y"), _split("http://a/b/c/d;p?q"))
    _Reference(scheme='http', authority='a', path='/b/c/../g', query='y')
    """
    scheme, authority, path, query = reference
    if scheme is not None and scheme.lower() == (base.scheme or "").lower() and authority is None:
        scheme = None  # the non-strict reading of §5.2.2: "http:g" is relative
    if scheme is not None or authority is not None:
        return _Reference(scheme or base.scheme, authority, path, query)
    if not path:
        return base._replace(query=base.query if query is None else query)
    if not path.startswith("/"):
        path = _merge(base, path)
    return _Reference(base.scheme, base.authority, path, query)


def _merge(base: _Reference, path: str) -> str:
    """RFC 3986 §5.2.3: a relative path appended to the base's directory."""
    if base.authority is not None and not base.path:
        return "/" + path
    return base.path[: base.path.rfind("/") + 1] + path


@lru_cache(maxsize=1024)  # a crawl meets few hosts, and each very often
def _authority(netloc: str, scheme: str) -> str:
    """The canonical ``host[:port]`` of a network location; the userinfo is dropped.

    >>> _authority("u:p@[::FFFF:1.2.3.4]:443", "https")
    '[::ffff:102:304]'
    >>> _authority("Example.com.:8080", "http")
    'example.com:8080'
    """
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        literal, bracket, port = hostport[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            raise ValueError(f"bad IPv6 literal: {netloc!r}")
        host = _ipv6(literal)
        port = port[1:]
    else:
        name, _, port = hostport.partition(":")
        host = _hostname(name)
    return host + _port(port, scheme)


def _ipv6(literal: str) -> str:
    """A bracketed IPv6 literal in compressed form; zone IDs and IPvFuture are refused."""
    try:
        address = ipaddress.IPv6Address(literal)
    except ValueError as exc:
        raise ValueError(f"bad IPv6 literal: {literal!r}") from exc
    if address.scope_id is not None:
        raise ValueError(f"IPv6 zone IDs have no meaning on the web: {literal!r}")
    return f"[{address.compressed}]"


def _hostname(name: str) -> str:
    """A registered name or IPv4 address, lower-case and IDNA-encoded, without trailing dots
    (the cases are in ``tests/test_urls.py``)."""
    decoded = unquote(name, errors="strict") if "%" in name else name
    if not decoded.isascii():
        decoded = _idna_encode(decoded)
    host = decoded.lower().rstrip(".")
    if not _HOST.fullmatch(host):
        raise ValueError(f"bad host: {name!r}")
    return host


def _idna_encode(name: str) -> str:
    """The ASCII form of a non-ASCII host name.

    UTS #46 (the ``idna`` package) first; IDNA 2003 (the standard codec) when that is missing
    or refuses, as it does for the underscores that real host names contain.

    >>> _idna_encode("ÉCOLE.fr")
    'xn--cole-9oa.fr'
    >>> _idna_encode("my_host.bücher.de")
    'my_host.xn--bcher-kva.de'
    """
    if _idna is not None:
        try:
            return str(_idna.encode(name, uts46=True).decode("ascii"))
        except UnicodeError:
            pass
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"bad host: {name!r}") from exc


def _port(port: str, scheme: str) -> str:
    """``:port``, or nothing for an empty or default port.

    >>> _port("0080", "http"), _port("", "http"), _port("8080", "https")
    ('', '', ':8080')
    """
    if not _PORT.fullmatch(port) or (port and int(port) > 65535):
        raise ValueError(f"bad port: {port!r}")
    if not port or int(port) == DEFAULT_PORTS[scheme]:
        return ""
    return f":{int(port)}"


def _normalize_escapes(text: str, escapes: re.Pattern[str]) -> str:
    """``text`` with its escapes normalised and its disallowed characters encoded.

    >>> _normalize_escapes("%7e%2f%e9 ü%zz", _PATH_ESCAPES)
    '~%2F%E9%20%C3%BC%25zz'
    """
    return escapes.sub(_fix_escape, text)


def _fix_escape(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) == 3:  # an escape: the pattern's other branch matches one character
        char = chr(int(found[1:], 16))
        return char if char in _UNRESERVED else found.upper()
    return "".join(f"%{octet:02X}" for octet in found.encode("utf-8"))


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 for an absolute path.

    >>> _remove_dot_segments("/a/b/c/./../../g")
    '/a/g'
    >>> _remove_dot_segments("/a/b/..")
    '/a/'
    >>> _remove_dot_segments("/../x/.")
    '/x/'
    """
    if "/." not in path:
        return path
    segments = path.split("/")[1:]
    output: list[str] = []
    for segment in segments:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)
