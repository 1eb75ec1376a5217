"""A small web site with every misbehaviour a crawler must survive, as one WSGI app.

``/`` links to ordinary pages and to each hostile one. The app records when each request
arrived (``/_log`` returns them as JSON), so tests measure politeness on the server side.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

StartResponse = Callable[..., Any]
HOSTILE = {
    "/slow": "trickles one byte every 0.3 s",
    "/many-headers": "sends 5,000 header fields",
    "/huge": "sends 3 MiB",
    "/loop-a": "redirects to /loop-b, which redirects back",
    "/short": "declares 1,000 bytes, sends 10 and closes",
    "/reset": "breaks the connection mid-body",
    "/bomb": "a gzip bomb: 64 KiB that inflate to 64 MiB",
    "/binary.html": "random bytes served as text/html",
    "/private/secret.html": "disallowed by robots.txt",
}
ROBOTS = "User-agent: *\nDisallow: /private/\nSitemap: /sitemap.xml\n"


def _html(title: str, links: Iterable[str]) -> bytes:
    items = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return f"<html><head><title>{title}</title></head><body><ul>{items}</ul></body></html>".encode()


def hostile_site() -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    log: list[tuple[float, str]] = []
    lock = threading.Lock()
    pages = {
        f"/page{i}.html": _html(f"page {i}", ["/", f"/page{(i + 1) % 8}.html"]) for i in range(8)
    }
    pages["/"] = _html("home", [*pages, *HOSTILE, "/calendar?month=0"])
    pages["/unlinked.html"] = _html("only in the sitemap", [])

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        query = environ.get("QUERY_STRING", "")
        with lock:
            log.append((time.time(), path + ("?" + query if query else "")))
        if path == "/_log":
            return _send(start_response, "200 OK", "application/json", json.dumps(log).encode())
        if path in pages:
            return _send(start_response, "200 OK", "text/html", pages[path])
        return _special(path, query, environ, start_response)

    return app


def _special(
    path: str, query: str, environ: dict[str, Any], start_response: StartResponse
) -> Iterable[bytes]:
    if path == "/robots.txt":
        return _send(start_response, "200 OK", "text/plain", ROBOTS.encode())
    if path == "/sitemap.xml":
        host = environ.get("HTTP_HOST", "localhost")
        body = (
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>http://{host}/unlinked.html</loc></url></urlset>"
        )
        return _send(start_response, "200 OK", "application/xml", body.encode())
    if path == "/calendar":  # an endless space of query variants
        month = int(query.partition("=")[2] or 0)
        return _send(
            start_response, "200 OK", "text/html", _html("cal", [f"/calendar?month={month + 1}"])
        )
    if path == "/slow":
        start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", "100")])
        return _trickle()
    if path == "/many-headers":
        start_response(
            "200 OK", [("Content-Type", "text/html")] + [(f"X-H{i}", "x") for i in range(5000)]
        )
        return [b"<html></html>"]
    if path == "/huge":
        return _send(start_response, "200 OK", "application/octet-stream", b"x" * (3 * 1024 * 1024))
    if path in ("/loop-a", "/loop-b"):
        target = "/loop-b" if path == "/loop-a" else "/loop-a"
        start_response("302 Found", [("Location", target), ("Content-Length", "0")])
        return [b""]
    if path == "/short":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "1000")])
        return [b"0123456789"]
    if path == "/reset":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "100000")])
        return _broken()
    if path == "/bomb":
        body = gzip.compress(b"\0" * (64 * 1024 * 1024))
        start_response(
            "200 OK",
            [
                ("Content-Type", "text/html"),
                ("Content-Encoding", "gzip"),
                ("Content-Length", str(len(body))),
            ],
        )
        return [body]
    if path == "/binary.html":
        return _send(start_response, "200 OK", "text/html", os.urandom(4096))
    if path.startswith("/private/"):
        return _send(start_response, "200 OK", "text/html", _html("secret", []))
    return _send(start_response, "404 Not Found", "text/plain", b"not found")


def _trickle() -> Iterator[bytes]:
    for _ in range(100):
        time.sleep(0.3)
        yield b"x"


def _broken() -> Iterator[bytes]:
    yield b"y" * 1000
    raise ConnectionResetError("the server broke the connection on purpose")


def _send(start_response: StartResponse, status: str, ctype: str, body: bytes) -> list[bytes]:
    start_response(status, [("Content-Type", ctype), ("Content-Length", str(len(body)))])
    return [body]
