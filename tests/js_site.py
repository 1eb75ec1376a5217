"""A site that builds itself with JavaScript, served on loopback from a thread.

The start page has no link and no subresource in its HTML: an inline script fetches its
navigation (a JSON API) and makes the links, fetches its content, POSTs a form's data and
shows the answer, loads a stylesheet (sent gzipped; it loads an image), and loads an image
only when it is scrolled into view. Behind the scripted links: pages whose own scripts link
one level deeper, a page that asks the browser to navigate elsewhere, a page that never stops
loading (an image whose body never ends), an endless scroll, a page whose answer never
comes, a page playing a sound (served in ranges of at most ``RANGE`` bytes, so that Chromium
asks for parts of it), a page listening to an event stream that never ends, and a page whose
service worker answers a ``fetch()`` from its cache.
``JsSite.asked`` holds every (method, path, body) received, ``JsSite.ranges`` the ranges of
the sound asked for; ``stop()`` ends the server and whatever it holds open.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.formatcorpus import wav

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
MEDIA = """<!doctype html><html><head><title>Media</title></head><body>
<audio id="tone" src="/media/tone.wav" preload="auto" controls></audio></body></html>"""
EVENTS = """<!doctype html><html><head><title>Events</title></head><body>
<p id="ev">waiting</p><script>
new EventSource('/api/events').onmessage = e => {
  document.getElementById('ev').textContent = e.data;
};
</script></body></html>"""
WORKER = """<!doctype html><html><head><title>Worker</title></head><body>
<p id="sw">waiting</p><script>
const sw = navigator.serviceWorker;
async function show() {
  const d = await (await fetch('/worker/data.json')).json();
  document.getElementById('sw').textContent = d.text;
}
const controlled = new Promise(r => sw.addEventListener('controllerchange', r, {once: true}));
sw.register('/worker/sw.js').then(() => sw.ready)
  .then(() => sw.controller ? 0 : Promise.race([controlled, new Promise(r => setTimeout(r, 300))]))
  .then(show);
</script></body></html>"""
SERVICE_WORKER = """
self.addEventListener('install', e => {
  const kept = caches.open('c').then(c => c.add('/worker/data.json'));
  e.waitUntil(kept.then(() => self.skipWaiting()));
});
self.addEventListener('activate', e => { e.waitUntil(self.clients.claim()); });
self.addEventListener('fetch', e => {
  e.respondWith(caches.match(e.request).then(hit => hit || fetch(e.request)));
});
"""
NAV = ["/section/a", "/section/b", "/hang", "/endless", "/no-answer", "/media", "/events"]
NAV += ["/worker/"]
RANGE = 32 * 1024  # the most bytes of the sound a range request is answered with


def _tone() -> bytes:
    """Six seconds of a square wave: about 96 KB, three ranges."""
    high, low = (
        (8000).to_bytes(2, "little", signed=True),
        (-8000).to_bytes(2, "little", signed=True),
    )
    return wav(b"".join(high if (i // 9) % 2 else low for i in range(8000 * 6)))


TONE = _tone()
NAVIGATE = "setTimeout(() => { location.href = '/navigated'; }, 50);"


@dataclass
class JsSite:
    url: str
    asked: list[tuple[str, str, bytes]] = field(default_factory=list)
    ranges: list[str] = field(default_factory=list)  # the Range fields of the sound's requests
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
        "/media": MEDIA,
        "/events": EVENTS,
        "/worker/": WORKER,
    }
    data = {
        "/api/nav.json": {"links": NAV},
        "/api/content.json": {"text": "Content fetched by a script"},
        "/api/deep/a.json": {"text": "Deep text a, fetched"},
        "/api/deep/b.json": {"text": "Deep text b, fetched"},
        "/worker/data.json": {"text": "Data the worker keeps"},
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
    if path == "/worker/sw.js":
        return 200, "text/javascript", SERVICE_WORKER.encode()
    if path == "/media/tone.wav":
        return 200, "audio/wav", TONE
    return 404, "text/plain", b"not found"


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


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
        if self.path == "/api/events":  # one event, then the stream stays open
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(b"data: An event streamed\n\n")
            self.wfile.flush()
            site.ended.wait(120)
            return
        got = answer(self.path)
        assert got is not None
        ranged = _RANGE.fullmatch(self.headers.get("Range") or "")
        if self.path == "/media/tone.wav" and ranged:
            site.ranges.append(ranged[0])
            self._part(got[2], int(ranged[1]), int(ranged[2] or len(got[2]) - 1))
            return
        coded = self.path == "/style.css" and "gzip" in self.headers.get("Accept-Encoding", "")
        self._send(*got, coded=coded)

    def _part(self, whole: bytes, first: int, last: int) -> None:
        """A range of the sound: at most ``RANGE`` bytes from ``first``."""
        last = min(last, first + RANGE - 1, len(whole) - 1)
        self.send_response(206)
        self.send_header("Content-Type", "audio/wav")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Range", f"bytes {first}-{last}/{len(whole)}")
        self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()
        self.wfile.write(whole[first : last + 1])

    def _send(self, status: int, kind: str, body: bytes, *, coded: bool = False) -> None:
        self.send_response(status)
        if coded:  # the style sheet, gzipped when the client takes it
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Type", kind)
        if kind == "audio/wav":
            self.send_header("Accept-Ranges", "bytes")
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
