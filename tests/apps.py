"""Small WSGI applications that tests run in real server processes."""

from __future__ import annotations

import os
import time
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


def analysed_provider(**settings: Any) -> Any:
    """``server_module.app.create_app(**settings)`` for the wrapping providers, its plugins
    off unless ``plugins=True``; with them, returned once they are done (they run after the
    index's rows are listed and move the records' datestamps: a test's harvests then see no
    record change under them)."""
    from server_module.app import create_app

    settings.setdefault("plugins", False)
    app = create_app(**settings)
    if settings["plugins"] and not app.extensions["oai_repository"].index.wait_analysed(120):
        raise TimeoutError("the provider's plugins did not finish within 120 s")
    return app


def held_provider(gate: str, **settings: Any) -> Any:
    """The provider with its plugins on, whose list pages after the first wait for its
    analyses: the tests' slow plugin waits for the file ``gate``, which a resumption request
    opens once the clock is two seconds past the first list request (so that the analyses'
    datestamps are later than the list's bound), then waits until the analyses are
    committed. A harvest then sees records change under it, every time, between two pages."""
    from server_module.app import create_app

    app = create_app(**settings)
    index = app.extensions["oai_repository"].index
    began: list[float] = []

    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        query = environ.get("QUERY_STRING", "")
        if "verb=List" in query and not began:
            began.append(time.time())
        elif "resumptionToken" in query and not os.path.exists(gate):
            deadline = time.monotonic() + 10
            while time.time() < int(began[0]) + 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            with open(gate, "w") as fh:
                fh.write("open")
            if not index.wait_analysed(60):
                raise TimeoutError("the provider's plugins did not finish within 60 s")
        return app(environ, start_response)  # type: ignore[no-any-return]

    return wrapped
