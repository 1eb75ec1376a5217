"""A small site whose robots.txt and sitemaps name whatever URLs a test gives, as a WSGI app.

For the crawl's scope tests: ``robots.txt`` declares each of ``declared`` as a ``Sitemap:``,
``/sitemap.xml`` is a sitemap index naming ``children`` and ``/pages.xml`` a urlset naming
``pages``. ``/`` links to ``/linked.html``; every other path is a small page. ``GET /_log``
returns the paths requested so far (itself excluded) as JSON, so a test can prove that a
server was never asked for anything.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

StartResponse = Callable[..., Any]
SM = "http://www.sitemaps.org/schemas/sitemap/0.9"


def sitemap_site(
    declared: Sequence[str] = (),
    children: Sequence[str] = (),
    pages: Sequence[str] = (),
    base: str = "",
) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    """``{base}`` in a URL given stands for ``base``: the server's own origin."""
    declared, children, pages = (
        [u.replace("{base}", base) for u in urls] for urls in (declared, children, pages)
    )
    log: list[str] = []
    lock = threading.Lock()
    robots = "User-agent: *\n" + "".join(f"Sitemap: {url}\n" for url in declared)
    index = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in children)
    urlset = "".join(f"<url><loc>{url}</loc></url>" for url in pages)
    fixed = {
        "/robots.txt": ("text/plain", robots),
        "/sitemap.xml": ("application/xml", f'<sitemapindex xmlns="{SM}">{index}</sitemapindex>'),
        "/pages.xml": ("application/xml", f'<urlset xmlns="{SM}">{urlset}</urlset>'),
        "/": ("text/html", '<html><body><a href="/linked.html">linked</a></body></html>'),
    }

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/_log":
            with lock:
                return _send(start_response, "application/json", json.dumps(log))
        with lock:
            log.append(path)
        ctype, body = fixed.get(path, ("text/html", f"<html><title>{path}</title></html>"))
        return _send(start_response, ctype, body)

    return app


def _send(start_response: StartResponse, ctype: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response("200 OK", [("Content-Type", ctype), ("Content-Length", str(len(data)))])
    return [data]
