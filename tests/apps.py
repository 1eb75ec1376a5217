"""Small WSGI applications that tests run in real server processes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def hello(greeting: str = "hello") -> WSGIApp:
    """Answers every request with ``greeting`` and the serving process's pid."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        body = f"{greeting} {os.getpid()} {environ['PATH_INFO']}".encode()
        start_response(
            "200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        )
        return [body]

    return app
