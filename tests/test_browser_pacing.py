"""Browser mode's pace, in Debian's real Chromium. A page waits once for a quiet network when
scrolling it brings nothing more (it is scrolled at its load). Its host's politeness, measured
in real nginx's access log: a host rests after a page ``--delay-factor`` times its
*document*'s fetch, as Heritrix rests after a URI's fetch, not times the whole page load (its
scripts, images and rendering, which the browser does as a user's browser would).

The site is a chain of three pages, each found only on the page before it (so one page loads
at a time, whatever the tabs): the first page's document is quick but its image comes slowly
(nginx's ``limit_rate``); the second page's document itself comes slowly; the third is quick.
The crawl runs as the README shows it, with default flags (a delay factor of 1).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bench.crawl import nginx_binary
from harvester.browser.browser import Browser, PageCapture, PageLimits
from tests.js_site import PNG, serve_js_site
from tests.servers import RunningServer, free_port, wait_until_answers
from tests.test_browser_capture import harvester, paths

RATE = 50_000  # bytes a second nginx sends of a slow file
CONF = """{user}worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{
    log_format timed '$msec $request_time $uri';
    access_log {prefix}/access.log timed;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    types {{ text/html html; image/png png; }}
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location /slow/ {{ limit_rate {rate}; }}
    }}
}}
"""


@dataclass(frozen=True)
class Asked:
    start: float  # the request's arrival, seconds (nginx's clock)
    end: float  # its answer's last byte
    path: str


def page(body: str, pad: int = 0) -> str:
    return f"<!doctype html><html><body>{body}<!-- {'x' * pad} --></body></html>"


def crawled(tmp: Path, files: dict[str, bytes | str], *flags: str) -> dict[str, Asked]:
    """``files`` served by nginx (``/slow/`` at RATE bytes a second), crawled with
    ``--browser``, default flags but ``flags``, into ``tmp/coll``; nginx's log, by path."""
    root, prefix = tmp / "www", tmp / "nginx"
    (prefix / "tmp").mkdir(parents=True)
    for name, body in {**files, "up.txt": "up"}.items():  # up.txt: asked until nginx answers
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(body.encode() if isinstance(body, str) else body)
    port = free_port()
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    (prefix / "nginx.conf").write_text(
        CONF.format(user=user, prefix=prefix, port=port, root=root.resolve(), rate=RATE)
    )
    argv = [nginx_binary(), "-p", str(prefix), "-e", str(prefix / "error.log")]
    argv += ["-c", str(prefix / "nginx.conf"), "-g", "daemon off;"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with RunningServer(proc, "127.0.0.1", port) as server:
        wait_until_answers(f"{server.url}/up.txt", proc, 30.0)
        run = harvester("harvest", f"{server.url}/", "--mode", "crawl", "--browser", "--out",
                        str(tmp / "coll"), *flags)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    asked: dict[str, Asked] = {}
    for line in (prefix / "access.log").read_text().splitlines():
        end, took, path = line.split()
        asked.setdefault(path, Asked(float(end) - float(took), float(end), path))
    return asked


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Asked], Path]:
    """The site crawled with ``--browser`` and default flags; nginx's log, by path, and the
    collection."""
    tmp = tmp_path_factory.mktemp("pacing")
    files: dict[str, bytes | str] = {
        "index.html": page('<img src="/slow/a.png"><a href="/slow/b.html">b</a>'),
        "slow/a.png": PNG + b"\0" * (5 * RATE),  # about 4-5 s
        "slow/b.html": page('<a href="/c.html">c</a>', 2 * RATE),  # 1-2 s
        "c.html": page("the end"),
    }
    return crawled(tmp, files), tmp / "coll"


def test_the_site_is_archived(log: tuple[dict[str, Asked], Path]) -> None:
    assert {"/", "/slow/a.png", "/slow/b.html", "/c.html"} <= set(paths(log[1]))


def test_a_slow_image_does_not_lengthen_its_host_s_rest(
    log: tuple[dict[str, Asked], Path],
) -> None:
    """The next page comes sooner after the slow image than the image took: a rest of the
    delay factor (1) times the first page's load would be longer than that alone."""
    asked = log[0]
    image, following = asked["/slow/a.png"], asked["/slow/b.html"]
    assert following.start - image.end < image.end - image.start


def test_a_slow_document_still_rests_its_host_as_long_as_it_took(
    log: tuple[dict[str, Asked], Path],
) -> None:
    """The rest after a page whose document came slowly is at least as long as it took."""
    slow, following = log[0]["/slow/b.html"], log[0]["/c.html"]
    assert slow.end - slow.start > 0.5  # nginx did send it slowly
    assert following.start - slow.end >= slow.end - slow.start


def test_a_page_waits_once_for_a_quiet_network_when_scrolling_brings_no_more() -> None:
    """The start page of ``tests/js_site.py`` (content fetched by scripts, put above a lazy
    image at its bottom) is whole after one quiet wait: scrolled at its load, its lazy image
    asked for with its fetches, the bottom still in view once they are in."""
    idle = 2.0

    async def run(url: str) -> tuple[float, PageCapture]:
        b = Browser("chromium", 1, PageLimits(seconds=30.0, idle=idle), max_rss=1 << 40)
        await b.start()
        try:
            began = time.monotonic()
            page = await b.load(url)
            return time.monotonic() - began, page
        finally:
            await b.close()

    with serve_js_site() as site:
        took, page = asyncio.run(run(site.url + "/"))
    assert {"/lazy.png", "/api/content.json", "/api/nav.json"} <= {
        urlsplit(e.url).path for e in page.exchanges
    }
    assert "Content fetched by a script" in page.text and page.screenshot
    assert took < 2 * idle  # two waits for a quiet network take at least that


def test_the_tabs_given_load_as_many_pages_of_one_host_at_once(tmp_path: Path) -> None:
    """``--browser-tabs 4`` on a one-host site: its four slow pages load at once, as
    browsertrix-crawler's four workers would (``--crawl-per-host`` left to its default)."""
    slow = [f"/slow/p{n}.html" for n in range(4)]
    links = "".join(f'<a href="{path}">p</a>' for path in slow)
    files: dict[str, bytes | str] = {"index.html": page(links)}
    files |= {path.lstrip("/"): page("a slow page", 2 * RATE) for path in slow}  # 1-2 s each
    asked = crawled(tmp_path, files, "--browser-tabs", "4")
    spans = [asked[path] for path in slow]
    latest_start, earliest_end = max(a.start for a in spans), min(a.end for a in spans)
    assert latest_start < earliest_end, spans  # all four were being sent at one moment
