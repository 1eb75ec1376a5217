"""The real provider over a site some of whose listed URLs redirect.

``redirecting(redirects={path: location}, **create_app_kwargs)`` answers each path of
``redirects`` with a 301 to its location and serves everything else from the provider, so
the provider lists a file whose URL nevertheless redirects, as after a site moves a page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tests.apps import analysed_provider

StartResponse = Callable[..., Any]


def redirecting(
    redirects: dict[str, str], **kwargs: Any
) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    app = analysed_provider(**kwargs)

    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        location = redirects.get(environ.get("PATH_INFO", ""))
        if location is None:
            return app(environ, start_response)
        body = f"moved to {location}\n".encode()
        headers = [("Location", location), ("Content-Type", "text/plain")]
        start_response("301 Moved Permanently", [*headers, ("Content-Length", str(len(body)))])
        return [body]

    return wrapped
