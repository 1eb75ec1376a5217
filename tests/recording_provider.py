"""The project's provider, keeping a copy of every OAI-PMH response body it sends, so a test
can compare what a harvester archived with what it was sent.

Each body goes into ``record_to`` as a file named by its SHA-1 (hex), after any content
coding the provider applied: the bytes on the wire.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from server_module.app import create_app as provider_app

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def create_app(record_to: str, **settings: Any) -> WSGIApp:
    """``server_module.app.create_app(**settings)``, recording each ``/oai`` body sent."""
    app = provider_app(**settings)
    folder = Path(record_to)
    folder.mkdir(parents=True, exist_ok=True)

    def recording(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        result = app(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()
        if environ.get("PATH_INFO") == "/oai":
            (folder / hashlib.sha1(body).hexdigest()).write_bytes(body)
        return [body]

    return recording


def sent(record_to: Path) -> set[str]:
    """The SHA-1 (hex) of every body the provider sent."""
    return {path.name for path in record_to.iterdir()}
