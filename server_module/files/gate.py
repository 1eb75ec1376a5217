"""The fast path for the site's files: a WSGI layer before Flask that answers a GET or HEAD
of an indexed file itself, with exactly what the Flask view answers.

A harvest fetches every file of a site once, so the provider's cost per file bounds the
harvest: Flask's request context, routing and response objects cost about as much as the
answer itself. The gate answers only the plain case, and passes every other request to the
Flask application unchanged, which answers it as before:

* a method other than GET or HEAD, a folder path (``/``, ``/a/``), a path another route
  claims (the OAI-PMH endpoint, its stylesheet and schemas, the ResourceSync documents), or a
  PATH_INFO that is not the raw path decoded once (say, a server that normalised it);
* a path with no live row in the index (a 404, or a folder's redirect to ``/a/``), or a file
  that is no longer public when opened (a 404).

The answer itself (:func:`server_module.files.answer.answer_file`: the public-path checks at
open, the headers, 304) is the one the view uses. A small body is read and sent as bytes:
gunicorn's ``sendfile`` costs more Python than a 64 KiB read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from werkzeug.http import HTTP_STATUS_CODES

from server_module.files.answer import FileAnswer, answer_file, request_relpath
from server_module.index.refresher import Refresher
from server_module.repository import Repository

log = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
METHODS = ("GET", "HEAD")
INLINE_BYTES = 64 * 1024  # a body this small is read into memory, not sent by a file wrapper
FILE_ENDPOINTS = ("files.root", "files.file")
STATUS = {code: f"{code} {HTTP_STATUS_CODES[code].upper()}" for code in (200, 206, 304, 416)}


class FileGate:
    """Wraps ``app.wsgi_app``; ``flask`` is the wrapped application (every other request)."""

    def __init__(self, app: Flask) -> None:
        self.flask: WSGIApp = app.wsgi_app
        self.repo: Repository = app.extensions["oai_repository"]
        self.refresher: Refresher = app.extensions["oai_refresher"]
        self.claimed = claimed_prefixes(app)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        answer = self._answer(environ)
        if answer is None:
            return self.flask(environ, start_response)
        start_response(STATUS[answer.status], answer.headers)
        return _body(answer, environ)

    def _answer(self, environ: dict[str, Any]) -> FileAnswer | None:
        if environ.get("REQUEST_METHOD") not in METHODS:
            return None
        path: str = environ.get("PATH_INFO", "")
        if not path or path.endswith("/") or path.startswith(self.claimed):
            return None
        relpath = request_relpath(environ)
        if b"/" + relpath != path.encode("latin-1", "replace"):
            return None
        self.refresher.open()  # what Flask's before_request does
        with self.repo.index.snapshot() as snap:
            record = snap.get_by_relpath(relpath)
        if record is None or record.deleted:
            return None
        return answer_file(self.repo, record, environ)


def claimed_prefixes(app: Flask) -> tuple[str, ...]:
    """The fixed leading part of every route but the files' (``/oai``, ``/oai/schemas/``):
    a path starting with one may be another route's, so the gate leaves it to Flask."""
    rules = app.url_map.iter_rules()
    return tuple(r.rule.split("<", 1)[0] for r in rules if r.endpoint not in FILE_ENDPOINTS)


def _body(answer: FileAnswer, environ: dict[str, Any]) -> Iterable[bytes]:
    handle = answer.handle
    if handle is None:
        return []
    if environ["REQUEST_METHOD"] == "HEAD":
        handle.close()
        return []
    if answer.size <= INLINE_BYTES:
        return [answer.body().read_all()]
    wrapper = environ.get("wsgi.file_wrapper")
    if wrapper is not None and answer.status == 200:  # the whole file, from its start
        return wrapper(handle, 8192)  # type: ignore[no-any-return]
    return answer.body()
