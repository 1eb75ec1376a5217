"""A replaying repository: a real OAI-PMH repository's recorded answers, byte for byte.

``replay(folder, ...)`` is a WSGI factory for :func:`tests.servers.start_wsgi`. ``folder``
(under ``tests/recordings/``) holds the answers as received and an ``index.json`` naming, for
each, the request's arguments, the HTTP status, the headers kept (Content-Type, Retry-After)
and the file; its ``README.md`` says where they were recorded and under which licence. A
request whose arguments (in any order) are a recording's is answered with it: its status and
headers as recorded, its body byte for byte. Rules for what was never recorded, each naming
a recording of the same repository to answer with:

- ``refuse_once``: the first request with this resumptionToken is answered with ``refusal``
  (the repository's own badResumptionToken answer): a token that expired once;
- ``otherwise``: a request with this argument (``from``) that matches no recording is
  answered with that recording (the repository's noRecordsMatch for a date with nothing new).

Anything else answers 404 ``not recorded``. ``GET /_log`` returns each request's query and
the file that answered it (``-`` for none) as JSON.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from tests.oai_apps import Environ, StartResponse, WSGIApp, _args, _respond

RECORDINGS = Path(__file__).parent / "recordings"
REASONS = {200: "OK", 403: "Forbidden", 404: "Not Found", 422: "Unprocessable Entity"}


def replay(
    folder: str,
    refuse_once: tuple[str, ...] = (),
    refusal: str | None = None,
    otherwise: dict[str, str] | None = None,
) -> WSGIApp:
    root = RECORDINGS / folder
    index = json.loads((root / "index.json").read_text())
    by_name = {entry["file"]: entry for entry in index}
    lock = threading.Lock()
    log: list[tuple[str, str]] = []
    refused: set[str] = set()

    def chosen(args: dict[str, str]) -> str | None:
        token = args.get("resumptionToken")
        if token in refuse_once and token not in refused and refusal is not None:
            refused.add(token)
            return refusal
        for entry in index:
            if entry["query"] == args:
                return str(entry["file"])
        for name, file in (otherwise or {}).items():
            if name in args:
                return file
        return None

    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        query = environ.get("QUERY_STRING", "")
        if environ.get("PATH_INFO") == "/_log":
            with lock:
                body = json.dumps(log).encode()
            return _respond(start_response, body, content_type="application/json")
        with lock:
            file = chosen(_args(environ))
            log.append((query, file or "-"))
        if file is None:
            return _respond(start_response, b"not recorded\n", "404 Not Found", "text/plain")
        entry = by_name[file]
        headers = {k.title(): v for k, v in entry["headers"].items()}
        status = f"{entry['status']} {REASONS.get(entry['status'], 'Recorded')}"
        kind = headers.pop("Content-Type", "text/xml")
        body = (root / file).read_bytes()
        return _respond(start_response, body, status, kind, list(headers.items()))

    return app
