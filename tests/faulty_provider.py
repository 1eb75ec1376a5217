"""The real provider behind a fault: for harvest tests of what a provider can do wrong.

``faulty(fault=..., **create_app_kwargs)`` builds the project's provider and wraps it so that
list requests misbehave in one named way. Counters live in the serving process.

The token faults hand out tokens of their own (``A``, ``B``; ``n1``, ``n2`` ...), each an alias
of a real token of the provider, so the list can carry on from any of them. ``GET /_heal``
turns the fault off: from then on the provider answers as it is, aliases still understood, so
a test can rerun a harvest against a good provider at the same address.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from tests.apps import analysed_provider
from tests.conftest import start_provider
from tests.servers import RunningServer

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
FAULTS = (
    "token-refused-once",
    "truncated-second-page",
    "entity-second-page",
    "laughs-second-page",
    "oversized-second-page",
    "trickle-second-page",
    "token-cycle",
    "token-endless-same",
    "token-endless-empty",
)
BAD_TOKEN = (
    b'<?xml version="1.0" encoding="UTF-8"?>'
    b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
    b"<responseDate>2030-01-01T00:00:00Z</responseDate><request>x</request>"
    b'<error code="badResumptionToken">expired</error></OAI-PMH>'
)
XXE = (
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
    b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">&x;</OAI-PMH>'
)
LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
    + b"".join(b'<!ENTITY %c "%s">' % (c, b"&%c;" % (c - 1) * 10) for c in range(ord("c"), 106))
    + b']><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">&i;</OAI-PMH>'
)
PADDING = 1024 * 1024  # what oversized-second-page adds to the real page, in an XML comment
TRICKLE_BYTES = 300  # trickle-second-page sends at most this many, one a second
TOKEN = re.compile(rb"(<resumptionToken[^>]*>)([^<]*)(</resumptionToken>)")
ITEMS = re.compile(rb"<record>.*?</record>|<header[ >].*?</header>", re.DOTALL)


def start_faulty(root: Path, tmp_path: Path, fault: str) -> RunningServer:
    """The provider of the site at ``root`` behind ``fault``, on a loopback port: 9 items a
    page, so that a list of a few dozen items has several pages."""
    return start_provider(
        root,
        tmp_path / "fi.sqlite",
        app="tests.faulty_provider:faulty",
        fault=fault,
        page_size=9,
        records_page_size=9,
    )


def faulty(fault: str, **kwargs: Any) -> WSGIApp:
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}")
    app = analysed_provider(**kwargs)
    seen = {"tokens": 0, "lists": 0, "healed": 0}
    aliases: dict[str, str] = {}

    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/_heal":
            seen["healed"] = 1
            return _send(start_response, b"healed")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        token = query.get("resumptionToken", [""])[0]
        if token in aliases:
            real = {"verb": query["verb"][0], "resumptionToken": aliases[token]}
            environ = {**environ, "QUERY_STRING": urlencode(real)}
        if seen["healed"] or not query.get("verb", [""])[0].startswith("List"):
            return app(environ, start_response)
        seen["lists"] += 1
        environ = {**environ, "HTTP_ACCEPT_ENCODING": "identity"}  # bodies the faults can edit
        if fault.startswith("token-") and fault != "token-refused-once":
            body = _token_fault(
                fault, seen["lists"], b"".join(app(environ, start_response_ignored)), aliases
            )
            return _send(start_response, body)
        if not token:
            return app(environ, start_response)
        seen["tokens"] += 1
        return _page_fault(fault, seen["tokens"], app, environ, start_response)

    return wrapped


def _page_fault(
    fault: str, count: int, app: WSGIApp, environ: dict[str, Any], start_response: StartResponse
) -> Iterable[bytes]:
    if fault == "token-refused-once" and count == 2:
        return _send(start_response, BAD_TOKEN)
    if fault == "truncated-second-page":
        body = b"".join(app(environ, start_response_ignored))
        return _send(start_response, body[: len(body) // 2])
    if fault == "entity-second-page":
        return _send(start_response, XXE)
    if fault == "laughs-second-page":
        return _send(start_response, LAUGHS)
    if fault == "oversized-second-page":
        body = b"".join(app(environ, start_response_ignored))
        return _send(start_response, body + b"<!--" + b" " * PADDING + b"-->")
    if fault == "trickle-second-page":
        body = b"".join(app(environ, start_response_ignored))
        start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
        return _trickle(body[:TRICKLE_BYTES])
    return app(environ, start_response)


def _token_fault(fault: str, count: int, body: bytes, aliases: dict[str, str]) -> bytes:
    """The page with its token replaced by an alias of it; the endless faults send page 1
    again (``-same``) or page 1 without its items (``-empty``), each time with a fresh alias
    meaning "after page 1"."""
    if fault != "token-cycle" and count > 1:
        body = aliases["page 1"].encode()
        if fault == "token-endless-empty":
            body = ITEMS.sub(b"", body)
    found = TOKEN.search(body)
    if found is None or not found.group(2):
        return body  # the list's real last page: nothing to misbehave with
    if count == 1:
        aliases["page 1"] = body.decode()
    name = "AB"[(count - 1) % 2] if fault == "token-cycle" else f"n{count}"
    aliases.setdefault(name, found.group(2).decode())  # the cycle's second A keeps the first
    return TOKEN.sub(rb"\g<1>" + name.encode() + rb"\g<3>", body, count=1)


def _trickle(body: bytes) -> Iterator[bytes]:
    for byte in body:
        time.sleep(1.0)
        yield bytes([byte])


def start_response_ignored(status: str, headers: list[tuple[str, str]], exc: Any = None) -> None:
    return None


def _send(start_response: StartResponse, body: bytes) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
    return [body]
