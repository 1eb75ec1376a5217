"""The project's provider, counting how many requests it is answering at once.

Each request is held ``hold`` seconds before it is answered, so a client's connections are
all busy at the same time; ``GET /_most_in_flight`` answers the most requests that were in
flight together. Counting requests at the server is exact where counting a client's TCP
connections is not: a scan of ``/proc/net/tcp`` is not atomic, and a connection closing while
another opens may both be seen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from server_module.app import create_app as provider_app

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def create_app(hold: float = 0.03, **settings: Any) -> WSGIApp:
    """``server_module.app.create_app(**settings)``, each request held ``hold`` seconds."""
    app = provider_app(**settings)
    lock = threading.Lock()
    in_flight = most = 0

    def counting(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        nonlocal in_flight, most
        if environ.get("PATH_INFO") == "/_most_in_flight":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [str(most).encode()]
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        try:
            time.sleep(hold)
            result = app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                getattr(result, "close", lambda: None)()
        finally:
            with lock:
                in_flight -= 1

    return counting
