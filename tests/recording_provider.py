"""The project's provider, keeping a copy of every OAI-PMH response body it sends, so a test
can compare what a harvester archived with what it was sent.

Each body goes into ``record_to`` as a file named by its SHA-1 (hex), after any content
coding the provider applied: the bytes on the wire.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tests.apps import analysed_provider

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def create_app(record_to: str, force_gzip: bool = False, **settings: Any) -> WSGIApp:
    """``server_module.app.create_app(**settings)``, recording each ``/oai`` body sent; with
    ``force_gzip``, every ``/oai`` body is gzip-coded whatever the client accepts (as a
    misconfigured server might)."""
    app = analysed_provider(**settings)
    folder = Path(record_to)
    folder.mkdir(parents=True, exist_ok=True)

    def recording(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        oai = environ.get("PATH_INFO") == "/oai"
        answer: list[Any] = []
        result = app(environ, lambda status, headers, *exc: answer.extend([status, headers]))
        try:
            body = b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()
        status, headers = answer
        if oai and force_gzip and not any(k.lower() == "content-encoding" for k, _v in headers):
            body = gzip.compress(body)
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers += [("Content-Encoding", "gzip"), ("Content-Length", str(len(body)))]
        start_response(status, headers)
        if oai:
            (folder / hashlib.sha1(body).hexdigest()).write_bytes(body)
        return [body]

    return recording


def sent(record_to: Path) -> set[str]:
    """The SHA-1 (hex) of every body the provider sent."""
    return {path.name for path in record_to.iterdir()}
