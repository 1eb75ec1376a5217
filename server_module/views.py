"""The Flask blueprint: the OAI-PMH endpoint, its stylesheet and schemas, and the site's files.

Files are looked up in the index by their exact relative path, never by joining a request path
onto the document root, and opened through :func:`server_module.files.docroot.open_public`, so
neither
``..`` (plain or percent-encoded, once or twice) nor a symlink to a hidden, excluded or
outside file reaches a byte that is not public. They are served with exactly the headers the
``http_header`` format reports. A folder is answered as nginx answers it: ``/a/`` serves
``a/index.html``, ``/a`` redirects to ``/a/``.
"""

from __future__ import annotations

import logging
from functools import partial
from importlib.resources import files as package_files
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, current_app, request
from werkzeug.datastructures import Headers
from werkzeug.http import parse_accept_header
from werkzeug.wsgi import wrap_file

from server_module.browserview import html_page, wants_html
from server_module.files.answer import answer_file, request_relpath
from server_module.files.headers import etag
from server_module.lists.contentcoding import coded, negotiate
from server_module.oai.errors import BadArgument
from server_module.oai.render import Envelope, document, errors_body
from server_module.oai.request import decode_arguments
from server_module.records import FileRecord
from server_module.repository import Repository

log = logging.getLogger(__name__)
XML = "text/xml; charset=UTF-8"
HTML = "text/html; charset=UTF-8"
STATIC = package_files("server_module") / "static"


def make_blueprint(endpoint: str) -> Blueprint:
    bp = Blueprint("oai", __name__)
    bp.add_url_rule(endpoint, "endpoint", oai_endpoint, methods=["GET", "POST"])
    bp.add_url_rule(f"{endpoint}/oai2.xsl", "stylesheet", stylesheet)
    bp.add_url_rule(f"{endpoint}/schemas/<name>", "schema", schema)
    return bp


def file_blueprint() -> Blueprint:
    bp = Blueprint("files", __name__)
    bp.add_url_rule("/", "root", site_file, defaults={"subpath": ""})
    bp.add_url_rule("/<path:subpath>", "file", site_file)
    return bp


def repository() -> Repository:
    repo: Repository = current_app.extensions["oai_repository"]
    return repo


# -- the endpoint ------------------------------------------------------------------------


def oai_endpoint() -> Response:
    repo = repository()
    raw = _raw_arguments()
    if raw is None:
        return _coded([_too_large(repo)])
    parts, follow = repo.respond(raw)
    if wants_html(parse_accept_header(request.headers.get("Accept"))):
        response = _coded([html_page(b"".join(parts))], HTML)
    else:
        response = _coded(parts)
    if follow is not None and repo.settings.read_ahead:
        # Runs once the body is sent, while the harvester parses it (see pagecache).
        response.call_on_close(partial(repo.read_ahead, *follow))
    return response


def _raw_arguments() -> list[tuple[str, str]] | None:
    """The arguments in order, repeats kept (POST form body, then query); None when oversized.

    Read from the bytes received (:func:`decode_arguments`): werkzeug's ``args`` and ``form``
    decode them as strict UTF-8, and a raw byte that is not UTF-8 failed the query (HTTP
    500) or silently emptied the form.
    """
    limit = current_app.extensions["oai_settings"].max_request_bytes
    query = request.query_string
    if len(query) > limit or (request.content_length or 0) > limit:
        return None
    pairs = decode_arguments(query)
    if request.method != "POST":
        return pairs
    if request.mimetype == "multipart/form-data":
        return list(request.form.items(multi=True)) + pairs
    body = request.stream.read(limit + 1)
    return None if len(body) > limit else decode_arguments(body) + pairs


def _too_large(repo: Repository) -> bytes:
    env = Envelope(int(repo.clock()), repo.settings.endpoint_url, repo.stylesheet_url)
    return document(env, (), errors_body([BadArgument("The request is too large")]))


def _coded(parts: list[bytes], content_type: str = XML) -> Response:
    """gzip or deflate when the client asks (advertised in Identify's ``compression``); the
    XML, or for a browser the page made of it (:mod:`server_module.browserview`)."""
    headers = Headers({"Content-Type": content_type, "Vary": "Accept, Accept-Encoding"})
    coding = negotiate(request.headers.get("Accept-Encoding"))
    if coding != "identity":
        headers["Content-Encoding"] = coding
    return Response(coded(parts, coding), headers=headers)


def stylesheet() -> Response:
    data = (STATIC / "oai2.xsl").read_bytes()
    return Response(data, content_type="text/xsl; charset=UTF-8")


def schema(name: str) -> Response:
    if name not in ("http_header.xsd", "preservation.xsd"):
        return Response("not found\n", status=404, content_type="text/plain")
    data = (STATIC / "schemas" / name).read_bytes()
    return Response(data, content_type="text/xml; charset=UTF-8")


# -- the site's files --------------------------------------------------------------------


def site_file(subpath: str) -> Response:
    """A file by its path; a folder, as nginx answers one, by its indexed ``index.html``:
    ``/a/`` serves ``a/index.html``, ``/a`` redirects 301 to ``/a/`` with the query kept."""
    relpath = request_relpath(request.environ)
    repo = repository()
    folder = not relpath or relpath.endswith(b"/")
    with repo.index.snapshot() as snap:
        record = None if folder else _live(snap.get_by_relpath(relpath))
        if record is None:
            index_page = relpath + (b"" if folder else b"/") + b"index.html"
            record = _live(snap.get_by_relpath(index_page))
            if record is not None and not folder:
                return _to_folder(relpath)
    if record is None:
        return Response("not found\n", status=404, content_type="text/plain")
    return _serve(repo, record)


def _live(record: FileRecord | None) -> FileRecord | None:
    return None if record is None or record.deleted else record


def _to_folder(relpath: bytes) -> Response:
    """301 to the folder's URL: built from the indexed path (never the raw request path, so
    ``//host`` cannot become a redirect off-site), under the script's mount point."""
    location = request.script_root + "/" + quote(relpath, safe="/") + "/"
    if request.query_string:
        location += "?" + request.query_string.decode("latin-1")
    response = Response("moved\n", status=301, content_type="text/plain")
    response.headers["Location"] = location
    response.autocorrect_location_header = False
    return response


def _serve(repo: Repository, record: FileRecord) -> Response:
    answer = answer_file(repo, record, request.environ)
    if answer is None:
        return Response("not found\n", status=404, content_type="text/plain")
    if answer.handle is None:
        return Response(status=answer.status, headers=answer.headers)
    if answer.status != 200:  # a range: the part only
        return Response(
            answer.body(),
            status=answer.status,
            headers=Headers(answer.headers),
            direct_passthrough=True,
        )
    body: Any = wrap_file(request.environ, answer.handle)
    return Response(body, headers=Headers(answer.headers), direct_passthrough=True)


__all__ = ["etag", "file_blueprint", "make_blueprint"]
