"""A site whose pages change at hidden Poisson rates (``watch`` tests, ``bench recrawl_live``).

``changing_site(rates, seed, log, start)`` is a WSGI application: ``/`` links to every page
(and never changes); page ``/p<i>`` changes as a Poisson process of rate ``rates[i]`` per
second (0: never), its change times drawn from ``seed`` (:func:`site_changes`) and counted
from ``start`` (epoch s; default when the app was built). A page's body names its version;
it answers with ``ETag`` and ``Last-Modified`` (the time of its last change) and 304 to a
matching ``If-None-Match`` or ``If-Modified-Since``. With ``log``, every version handed out
in a 200 is appended to that file as ``path version``.
"""

from __future__ import annotations

import random
import threading
import time
from bisect import bisect_right
from collections.abc import Iterable
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

from tests.apps import StartResponse, WSGIApp

HORIZON = 24 * 3600.0  # change times are drawn this far ahead


def change_times(rate: float, rng: random.Random) -> list[float]:
    times, now = [], 0.0
    while rate > 0 and (now := now + rng.expovariate(rate)) < HORIZON and len(times) < 100_000:
        times.append(now)
    return times


def site_changes(rates: list[float], seed: int) -> list[list[float]]:
    """Every page's change times, in seconds from the site's start (what the site hides)."""
    rng = random.Random(seed)
    return [change_times(rate, rng) for rate in rates]


def changing_site(
    rates: list[float], seed: int = 1, log: str | None = None, start: float | None = None
) -> WSGIApp:
    changes = site_changes(rates, seed)
    start = time.time() if start is None else start
    lock = threading.Lock()

    def version(page: int) -> tuple[int, float]:
        """The page's version now and when it began (epoch s)."""
        count = bisect_right(changes[page], time.time() - start)
        return count, start + (changes[page][count - 1] if count else 0.0)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        if path == "/":
            links = "".join(f'<a href="/p{i}">p{i}</a>\n' for i in range(len(rates)))
            return _send(start_response, f"<html><body>\n{links}</body></html>", '"root"', start)
        if not path.startswith("/p") or not path[2:].isdigit() or int(path[2:]) >= len(rates):
            start_response("404 Not Found", [("Content-Length", "0")])
            return [b""]
        count, since = version(int(path[2:]))
        etag = f'"{path[1:]}-{count}"'
        if _not_modified(environ, etag, since):
            start_response("304 Not Modified", [("ETag", etag)])
            return [b""]
        if log is not None:
            with lock, open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{path} {count}\n")
        return _send(
            start_response, f"<html><body>{path} version {count}</body></html>", etag, since
        )

    return app


def _not_modified(environ: dict[str, Any], etag: str, since: float) -> bool:
    if "HTTP_IF_NONE_MATCH" in environ:
        return bool(environ["HTTP_IF_NONE_MATCH"] == etag)
    value = environ.get("HTTP_IF_MODIFIED_SINCE")
    if not value:
        return False
    try:
        return parsedate_to_datetime(value).timestamp() >= int(since)
    except (TypeError, ValueError):
        return False


def _send(start_response: StartResponse, text: str, etag: str, since: float) -> list[bytes]:
    body = text.encode()
    start_response(
        "200 OK",
        [
            ("Content-Type", "text/html"),
            ("Content-Length", str(len(body))),
            ("ETag", etag),
            ("Last-Modified", formatdate(since, usegmt=True)),
        ],
    )
    return [body]
