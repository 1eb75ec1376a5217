"""A URL as a request sends it: the origin to connect to, the ``Host`` field, the request
target and any credentials, each as yarl spells it (and aiohttp sent it).

yarl parses and re-quotes every URL, 8 µs of CPU for one it has not seen, though most URLs a
harvest fetches are plain: ``http(s)://host[:port]/path``, with a lower-case host name or
IPv4 address, no credentials, query or fragment, and a path of the characters yarl keeps as
they are, with no ``.`` or ``..`` segment. One regular expression splits those into exactly
the parts yarl gives (``tests/test_requesturl.py`` checks the two against each other on
generated URLs); every other URL goes to yarl.

>>> plain = request_url("http://127.0.0.1:8080/a/b.html")
>>> plain.host, plain.port, plain.host_field, plain.target
('127.0.0.1', 8080, '127.0.0.1:8080', '/a/b.html')
>>> request_url("https://Example.org:443/a b").target, request_url("https://u:p@h").credentials
('/a%20b', ('u', 'p'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yarl

__all__ = ["RequestURL", "origin_prefix", "request_url"]

_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_PLAIN = re.compile(
    rf"(https?)://((?:{_LABEL}\.)*{_LABEL})"  # scheme, host
    r"(?::([1-9][0-9]{0,4}))?"  # port
    r"((?:/(?!\.\.?(?:/|\Z))[A-Za-z0-9._~!$&'()*+,;=:@-]*)*)"  # path without dot segments
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")  # scheme and authority


@dataclass(slots=True)
class RequestURL:
    """Where a request goes and how its head names what it asks for."""

    scheme: str
    host: str  # as the connection dials it
    port: int
    host_field: str  # the Host header's value: the port only when it is not the default
    target: str  # path and query, ``/`` at least
    credentials: tuple[str, str] | None  # user and password, when the URL holds them


def request_url(url: str) -> RequestURL:
    """``url`` split for a request; ``ValueError`` if it is not an absolute http(s) URL."""
    plain = _PLAIN.fullmatch(url)
    if plain is not None:
        scheme, host, port_text, path = plain.groups()
        default = _DEFAULT_PORTS[scheme]
        port = int(port_text) if port_text else default
        if port <= 65535:
            field = host if port == default else f"{host}:{port}"
            return RequestURL(scheme, host, port, field, path or "/", None)
    return general(url)


def general(url: str) -> RequestURL:
    """:func:`request_url` by yarl alone, for any URL."""
    try:
        parsed = yarl.URL(url)
        host, port = parsed.raw_host, parsed.explicit_port or parsed.port
    except TypeError as exc:
        raise ValueError(str(exc)) from exc
    if parsed.scheme not in _DEFAULT_PORTS or not host or port is None:
        raise ValueError("not an absolute http(s) URL")
    user = parsed.user
    credentials = None if user is None else (user, parsed.password or "")
    field = parsed.host_port_subcomponent or host
    return RequestURL(parsed.scheme, host, port, field, parsed.raw_path_qs or "/", credentials)


def origin_prefix(url: str) -> str:
    """``url``'s scheme and authority as spelt (``url`` itself without them): one key per
    origin, found without parsing (two spellings of one origin give two keys).

    >>> origin_prefix("https://User@Example.org:8443/a/b?c=d#e"), origin_prefix("a/b")
    ('https://User@Example.org:8443', 'a/b')
    """
    origin = _ORIGIN.match(url)
    return origin.group() if origin else url
