"""A site that builds itself with JavaScript, served on loopback from a thread.

The start page has no link and no subresource in its HTML: an inline script fetches its
navigation (a JSON API) and makes the links, fetches its content, POSTs a form's data and
shows the answer, loads a stylesheet (sent gzipped; it loads an image), and loads an image
only when it is scrolled into view. Behind the scripted links: pages whose own scripts link
one level deeper, a page that asks the browser to navigate elsewhere, a page that never stops
loading (an image whose body never ends), an endless scroll, and a page whose answer never
comes.
``JsSite.asked`` holds every (method, path, body) received; ``stop()`` ends the server and
whatever it holds open.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005ff01ffa7c5d1e40000000049454e44ae426082"
)
INDEX = """<!doctype html><html><head><title>JS site</title></head><body>
<h1>JS site</h1><nav id="nav"></nav><p id="content">loading</p><p id="posted"></p>
<div style="height:4000px"></div><img id="lazy" alt="lazy">
<script>
fetch('/api/nav.json').then(r => r.json()).then(d => {
  for (const href of d.links) {
    const a = document.createElement('a'); a.href = href; a.textContent = href;
    document.getElementById('nav').append(a, ' ');
  }
});
fetch('/api/content.json').then(r => r.json()).then(d => {
  document.getElementById('content').textContent = d.text;
});
fetch('/api/submit', {method: 'POST', headers: {'Content-Type': 'application/json'},
                      body: JSON.stringify({q: 'cooperative'})})
  .then(r => r.text()).then(t => { document.getElementById('posted').textContent = t; });
const css = document.createElement('link'); css.rel = 'stylesheet'; css.href = '/style.css';
document.head.append(css);
new IntersectionObserver((seen, obs) => {
  if (!seen.some(e => e.isIntersecting)) return;
  document.getElementById('lazy').src = '/lazy.png'; obs.disconnect();
}).observe(document.getElementById('lazy'));
</script></body></html>"""
SECTION = """<!doctype html><html><head><title>Section {name}</title></head><body>
<h1>Section {name}</h1><div id="more"></div>
<script>
const a = document.createElement('a'); a.href = '/deep/{name}'; a.textContent = 'deeper';
document.getElementById('more').append(a);
{extra}
</script></body></html>"""
DEEP = """<!doctype html><html><head><title>Deep {name}</title></head><body>
<p id="t">deep</p><script>
fetch('/api/deep/{name}.json').then(r => r.json()).then(d => {{
  document.getElementById('t').textContent = d.text;
}});
</script></body></html>"""
HANG = """<!doctype html><html><head><title>Hangs</title></head><body>
<p>This page never stops loading.</p><img src="/never-ends.png"></body></html>"""
ENDLESS = """<!doctype html><html><head><title>Endless</title></head><body>
<div id="feed"></div><script>
let n = 0;
function more() {
  fetch('/api/feed?n=' + (n++)).then(r => r.json()).then(d => {
    const p = document.createElement('p'); p.style.height = '2000px'; p.textContent = d.text;
    document.getElementById('feed').append(p);
  });
}
more();
window.addEventListener('scroll', () => {
  if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 10) more();
});
</script></body></html>"""
NAV = ["/section/a", "/section/b", "/hang", "/endless", "/no-answer"]
NAVIGATE = "setTimeout(() => { location.href = '/navigated'; }, 50);"


@dataclass
class JsSite:
    url: str
    asked: list[tuple[str, str, bytes]] = field(default_factory=list)
    ended: threading.Event = field(default_factory=threading.Event)


def answer(path: str) -> tuple[int, str, bytes] | None:
    """The status, type and body of ``path``; None for the paths that never answer whole."""
    pages = {
        "/": INDEX,
        "/section/a": SECTION.format(name="a", extra=""),
        "/section/b": SECTION.format(name="b", extra=NAVIGATE),
        "/navigated": "<!doctype html><title>Navigated</title><p>navigated here</p>",
        "/deep/a": DEEP.format(name="a"),
        "/deep/b": DEEP.format(name="b"),
        "/hang": HANG,
        "/endless": ENDLESS,
    }
    data = {
        "/api/nav.json": {"links": NAV},
        "/api/content.json": {"text": "Content fetched by a script"},
        "/api/deep/a.json": {"text": "Deep text a, fetched"},
        "/api/deep/b.json": {"text": "Deep text b, fetched"},
    }
    if path in pages:
        return 200, "text/html; charset=utf-8", pages[path].encode()
    if path in data:
        return 200, "application/json", json.dumps(data[path]).encode()
    if path.startswith("/api/feed"):
        return 200, "application/json", json.dumps({"text": f"item {path}"}).encode()
    if path == "/style.css":
        return 200, "text/css", b"body { background: url(/bg.png) }"
    if path in ("/bg.png", "/lazy.png"):
        return 200, "image/png", PNG
    return 404, "text/plain", b"not found"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        self._answer(b"")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/api/submit":
            self.server.site.asked.append(("POST", self.path, body))
            self._send(200, "text/plain", b"Posted: " + body)
            return
        self._answer(body)

    def _answer(self, body: bytes) -> None:
        site = self.server.site
        site.asked.append((self.command, self.path, body))
        if self.path == "/no-answer":  # nothing at all, until the site stops
            site.ended.wait(120)
            return
        if self.path == "/never-ends.png":  # a head, part of a body, then nothing
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(PNG[:8])
            self.wfile.flush()
            site.ended.wait(120)
            return
        got = answer(self.path)
        assert got is not None
        coded = self.path == "/style.css" and "gzip" in self.headers.get("Accept-Encoding", "")
        self._send(*got, coded=coded)

    def _send(self, status: int, kind: str, body: bytes, *, coded: bool = False) -> None:
        self.send_response(status)
        if coded:  # the style sheet, gzipped when the client takes it
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: JsSite


@contextmanager
def serve_js_site(host: str = "127.0.0.1") -> Iterator[JsSite]:
    httpd = _Server((host, 0), _Handler)
    httpd.site = JsSite(f"http://{host}:{httpd.server_address[1]}")
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.site
    finally:
        httpd.site.ended.set()
        httpd.shutdown()
        httpd.server_close()
