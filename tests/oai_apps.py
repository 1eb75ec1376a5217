"""Small OAI-PMH WSGI applications, most of them deliberately broken, for the client's tests.

Each factory takes JSON-serialisable keyword arguments and returns a WSGI callable, so
``tests.servers.start_wsgi("tests.oai_apps:<factory>", kwargs)`` can run it. :func:`mount`
puts several of them under path prefixes of one server (one process for a whole test module)
and counts the requests each one got (``GET /_hits/<prefix>``).
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape, quoteattr

StartResponse = Callable[..., Any]
Environ = dict[str, Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

OAI_NS = "http://www.openarchives.org/OAI/2.0/"
RESPONSE_DATE = "2024-05-10T12:00:00Z"
XML = "text/xml; charset=UTF-8"


def item_identifier(n: int) -> str:
    return f"http://example.org/item{n}.html"


def _respond(
    start_response: StartResponse,
    body: bytes,
    status: str = "200 OK",
    content_type: str = XML,
    extra: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
    start_response(status, headers + (extra or []))
    return [body]


def _not_found(start_response: StartResponse) -> list[bytes]:
    return _respond(start_response, b"not found\n", "404 Not Found", "text/plain")


def _args(environ: Environ) -> dict[str, str]:
    return dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))


def _base_url(environ: Environ) -> str:
    return f"http://{environ['HTTP_HOST']}{environ.get('SCRIPT_NAME', '')}"


def envelope(base_url: str, args: dict[str, str], inner: str) -> bytes:
    """A complete OAI-PMH response around ``inner`` (an error or the verb's element)."""
    attrs = "".join(f" {k}={quoteattr(v)}" for k, v in sorted(args.items()))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<OAI-PMH xmlns="{OAI_NS}"><responseDate>{RESPONSE_DATE}</responseDate>'
        f"<request{attrs}>{escape(base_url)}</request>{inner}</OAI-PMH>\n"
    ).encode()


def identify_element(base_url: str) -> str:
    return (
        "<Identify><repositoryName>Test repository</repositoryName>"
        f"<baseURL>{escape(base_url)}</baseURL><protocolVersion>2.0</protocolVersion>"
        "<adminEmail>admin@example.org</adminEmail>"
        "<earliestDatestamp>2024-01-01T00:00:00Z</earliestDatestamp>"
        "<deletedRecord>persistent</deletedRecord>"
        "<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>"
        "<compression>gzip</compression><compression>deflate</compression></Identify>"
    )


def error_element(code: str, text: str) -> str:
    return f'<error code="{code}">{escape(text)}</error>'


def _header(n: int) -> str:
    deleted = ' status="deleted"' if n == 1 else ""
    return (
        f"<header{deleted}><identifier>{item_identifier(n)}</identifier>"
        f"<datestamp>2024-05-0{1 + n % 9}T10:00:00Z</datestamp>"
        f"<setSpec>text</setSpec><setSpec>text:html</setSpec></header>"
    )


def _record(n: int) -> str:
    if n == 1:
        return f"<record>{_header(n)}</record>"
    return (
        f"<record>{_header(n)}<metadata><oai_dc:dc "
        'xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>Item {n}</dc:title></oai_dc:dc></metadata></record>"
    )


def _token_element(page: int, pages: int, per_page: int) -> str:
    if pages == 1:
        return ""
    token = f"page-{page + 1}" if page + 1 < pages else ""
    attrs = f'cursor="{page * per_page}" completeListSize="{pages * per_page}"'
    return f"<resumptionToken {attrs}>{token}</resumptionToken>"


def provider(
    pages: int = 3,
    per_page: int = 2,
    bad_token: str | None = None,
    no_records: bool = False,
    compress: bool = False,
    loop_after: int | None = None,
) -> WSGIApp:
    """A well-behaved provider of ``pages * per_page`` items; tokens are ``page-<n>``.

    Item 1 is deleted. ``bad_token`` is answered with badResumptionToken, ``no_records``
    answers every list with noRecordsMatch, ``compress`` gzips every answer; from page
    ``loop_after`` on, the token leads back to the first page's successor, forever.
    """

    def page_of(args: dict[str, str]) -> int | None:
        token = args.get("resumptionToken")
        if token is None:
            return 0
        if token == bad_token or not token.startswith("page-"):
            return None
        number = token.removeprefix("page-")
        return int(number) if number.isdigit() and int(number) < pages else None

    def list_body(verb: str, args: dict[str, str]) -> str:
        if verb not in ("ListIdentifiers", "ListRecords"):
            return error_element("badVerb", "unsupported verb")
        if no_records:
            return error_element("noRecordsMatch", "nothing matches")
        page = page_of(args)
        if page is not None and loop_after is not None and page >= loop_after:
            page = 0
        if page is None:
            return error_element("badResumptionToken", "unknown or expired token")
        render = _header if verb == "ListIdentifiers" else _record
        items = "".join(render(n) for n in range(page * per_page, (page + 1) * per_page))
        return f"<{verb}>{items}{_token_element(page, pages, per_page)}</{verb}>"

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        args = _args(environ)
        verb = args.get("verb", "")
        base = _base_url(environ)
        inner = identify_element(base) if verb == "Identify" else list_body(verb, args)
        body = envelope(base, args, inner)
        if not compress:
            return _respond(start_response, body)
        packed = gzip.compress(body)
        return _respond(start_response, packed, extra=[("Content-Encoding", "gzip")])

    return app


def failing(
    failures: int,
    status: str = "503 Service Unavailable",
    retry_after: str | None = None,
) -> WSGIApp:
    """Answers the first ``failures`` requests with ``status``, then acts as :func:`provider`."""
    lock, seen = threading.Lock(), [0]
    healthy = provider()

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        with lock:
            seen[0] += 1
            failed = seen[0] <= failures
        if not failed:
            return healthy(environ, start_response)
        extra = [("Retry-After", retry_after)] if retry_after is not None else []
        return _respond(start_response, b"busy\n", status, "text/plain", extra)

    return app


def document(
    body: str,
    status: str = "200 OK",
    content_type: str = XML,
    encoding: str = "utf-8",
) -> WSGIApp:
    """Answers every request with the same ``body``: broken XML, HTML, hostile documents."""
    data = body.encode(encoding)

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        return _respond(start_response, data, status, content_type)

    return app


def endless(mib: int, declare_length: bool = False) -> WSGIApp:
    """A ``mib`` MiB response: the start of an OAI-PMH document, then padding in a comment."""
    chunk = b" " * 2**20

    def body() -> Iterator[bytes]:
        yield b'<?xml version="1.0"?><OAI-PMH xmlns="' + OAI_NS.encode() + b'"><!--'
        for _ in range(mib):
            yield chunk

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        headers = [("Content-Type", XML)]
        if declare_length:
            headers.append(("Content-Length", str(mib * 2**20 + 50)))
        start_response("200 OK", headers)
        return body()

    return app


def gzip_bomb(mib: int) -> WSGIApp:
    """A small gzip body that inflates to ``mib`` MiB of spaces inside an OAI-PMH document."""
    inner = b"<!--" + b" " * (mib * 2**20) + b"-->"
    data = gzip.compress(envelope("http://bomb/", {}, inner.decode()), compresslevel=9)

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        return _respond(start_response, data, extra=[("Content-Encoding", "gzip")])

    return app


def redirect(location: str, status: str = "302 Found") -> WSGIApp:
    """Redirects every request to ``location``, keeping the query string."""

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        query = environ.get("QUERY_STRING", "")
        target = f"{location}?{query}" if query else location
        return _respond(start_response, b"moved\n", status, "text/plain", [("Location", target)])

    return app


FACTORIES: dict[str, Callable[..., WSGIApp]] = {
    f.__name__: f for f in (provider, failing, document, endless, gzip_bomb, redirect)
}


def mount(apps: dict[str, list[Any]]) -> WSGIApp:
    """Several apps in one server: ``{"/prefix": ["factory", {kwargs}]}``; 404 elsewhere.

    A request goes to the longest matching prefix, with the prefix moved to SCRIPT_NAME.
    """
    routes = {prefix: FACTORIES[name](**kwargs) for prefix, (name, kwargs) in apps.items()}
    hits = dict.fromkeys(routes, 0)
    lock = threading.Lock()
    order = sorted(routes, key=len, reverse=True)

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_hits/"):
            count = hits.get(path.removeprefix("/_hits"), 0)
            return _respond(start_response, str(count).encode(), content_type="text/plain")
        prefix = next((p for p in order if path == p or path.startswith(p + "/")), None)
        if prefix is None:
            return _not_found(start_response)
        with lock:
            hits[prefix] += 1
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
        environ["PATH_INFO"] = path.removeprefix(prefix)
        return routes[prefix](environ, start_response)

    return app
