"""The real provider behind a fault: for harvest tests of what a provider can do wrong.

``faulty(fault=..., **create_app_kwargs)`` builds the project's provider and wraps it so that
list requests misbehave in one named way. Counters live in the serving process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from server_module.app import create_app

StartResponse = Callable[..., Any]
FAULTS = ("token-refused-once", "truncated-second-page", "entity-second-page")
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


def faulty(fault: str, **kwargs: Any) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}")
    app = create_app(**kwargs)
    seen = {"tokens": 0}

    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        query = environ.get("QUERY_STRING", "")
        if "resumptionToken=" not in query:
            return app(environ, start_response)
        seen["tokens"] += 1
        if fault == "token-refused-once" and seen["tokens"] == 2:
            return _send(start_response, BAD_TOKEN)
        if fault == "truncated-second-page" and seen["tokens"] >= 1:
            body = b"".join(app(environ, start_response_ignored))
            return _send(start_response, body[: len(body) // 2])
        if fault == "entity-second-page":
            return _send(start_response, XXE)
        return app(environ, start_response)

    return wrapped


def start_response_ignored(status: str, headers: list[tuple[str, str]], exc: Any = None) -> None:
    return None


def _send(start_response: StartResponse, body: bytes) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
    return [body]
