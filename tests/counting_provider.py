"""The project's provider, counting how many requests it answers at once and logging them.

Each request is held ``hold`` seconds before it is answered (an OAI-PMH request
``list_hold`` more), so a client's connections are all busy at once. ``GET
/_most_in_flight`` answers the most requests that were in flight together, ``GET
/_requests`` the log: one JSON list per request, ``[start, end, path, query]`` (monotonic
seconds). Counting requests at the server is exact where counting a client's TCP
connections is not: a scan of ``/proc/net/tcp`` is not atomic, and a connection closing while
another opens may both be seen.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from tests.apps import analysed_provider

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def create_app(hold: float = 0.03, list_hold: float = 0.0, **settings: Any) -> WSGIApp:
    """``server_module.app.create_app(**settings)``, each request held and counted."""
    app = analysed_provider(**settings)
    lock = threading.Lock()
    in_flight = most = 0
    log: list[tuple[float, float, str, str]] = []
    own = {
        "/_most_in_flight": lambda: str(most),
        "/_requests": lambda: json.dumps(log),
    }

    def counting(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        nonlocal in_flight, most
        path = environ.get("PATH_INFO", "")
        if path in own:
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [own[path]().encode()]
        started = time.monotonic()
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        try:
            time.sleep(hold + (list_hold if path == "/oai" else 0))
            result = app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                getattr(result, "close", lambda: None)()
        finally:
            with lock:
                in_flight -= 1
                log.append((started, time.monotonic(), path, environ.get("QUERY_STRING", "")))

    return counting
