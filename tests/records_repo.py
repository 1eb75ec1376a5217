"""A test repository of the kind digital libraries run (DSpace, EPrints, OJS), with quirks.

``repository(...)`` is a WSGI factory for :func:`tests.servers.start_wsgi`. Its identifiers
are ``oai:repo.test:<n>``; each record's ``dc:identifier`` is the item's landing page
(``/items/<n>``), whose full text (``/files/<n>.pdf``) is named only by its
``citation_pdf_url`` meta tag, and whose data file (``/files/<n>.csv``) only by its Signposting
``Link: <…>; rel="item"`` header; its ``dc:relation`` names ``/cited`` on ``localhost``,
another registrable domain. Pages and files answer conditional GET (ETag). The endpoint
(``/oai``) has day granularity; item ``n``'s datestamp is ``2024-05-01`` plus ``n // 3`` days.

Quirks, each off by default: ``retry_after`` ("seconds" or "date": the first ListRecords
answers 503 with that Retry-After), ``expire_page`` (the first time that page's token comes
back it is badResumptionToken), ``repeat_page`` (that page's token is the previous page's),
``broken`` (that item's record is not well-formed XML), ``size_offset`` (added to
completeListSize), ``delay`` (seconds before each list page), ``relist`` (the second list page
carries that item again, changed meanwhile: a later datestamp and a new title).

Quirks of real repositories (issue 33), off by default too: ``order`` (``"newest-first"``:
the list sorted newest first, as DOAJ's; ``"shuffled"``: each page of the list holds items
older than the page before's newest, as InvenioRDM's second page did), ``expire_always``
(every token is refused), ``error_status`` (the HTTP status of every OAI-PMH error answer,
as InvenioRDM's 422), ``offset`` (each responseDate sent in that UTC offset, as
``+05:45``), ``earliest`` (Identify's earliestDatestamp as given, garbage or not),
``identify_error`` (Identify answered with that OAI-PMH error code), ``headerless`` (that
item's header has no identifier), ``forbidden_page`` (that list page answers 403) and
``formats`` (``"odd"``: ListMetadataFormats adds a format without ``<metadataPrefix>`` and one
with a ``<__class__>`` child; ``"loop"``: it hands out a token naming itself);
``GET /_quirk?forbidden_page=1&expire_always=1`` turns those two on while it runs. ``GET
/_change/<n>`` gives item ``n`` today's datestamp and a new title, ``GET /_delete/<n>`` deletes
it; ``GET /_log`` returns every request path and query as JSON.
"""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from xml.sax.saxutils import escape

from tests.oai_apps import (
    Environ,
    StartResponse,
    WSGIApp,
    _args,
    _respond,
    envelope,
    error_element,
)

DC = (
    '<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/">'
)


FORMAT = (
    "<metadataFormat><metadataPrefix>oai_dc</metadataPrefix>"
    "<schema>http://www.openarchives.org/OAI/2.0/oai_dc.xsd</schema>"
    "<metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/"
    "</metadataNamespace></metadataFormat>"
)
ODD_FORMATS = (
    "<metadataFormat><schema>http://repo.test/no-prefix.xsd</schema></metadataFormat>"
    "<metadataFormat><metadataPrefix>odd</metadataPrefix><__class__>x</__class__>"
    "<schema>http://repo.test/odd.xsd</schema></metadataFormat>"
)


def identify(base: str, earliest: str = "2024-05-01") -> str:
    return (
        "<Identify><repositoryName>Quirky repository</repositoryName>"
        f"<baseURL>{base}</baseURL><protocolVersion>2.0</protocolVersion>"
        f"<adminEmail>admin@repo.test</adminEmail><earliestDatestamp>{escape(earliest)}"
        "</earliestDatestamp><deletedRecord>persistent</deletedRecord>"
        "<granularity>YYYY-MM-DD</granularity></Identify>"
    )


def metadata_formats(quirk: str | None) -> str:
    """ListMetadataFormats as ``quirk`` has it; ``loop``'s every answer names itself again."""
    if quirk == "loop":
        again = "<resumptionToken>again</resumptionToken>"
        return f"<ListMetadataFormats>{FORMAT}{again}</ListMetadataFormats>"
    odd = ODD_FORMATS if quirk == "odd" else ""
    return f"<ListMetadataFormats>{FORMAT}{odd}</ListMetadataFormats>"


def shifted(body: bytes, offset: str) -> bytes:
    """``body`` with its responseDate sent in the UTC ``offset`` (``+05:45``)."""
    match = re.search(rb"<responseDate>([^<]+)</responseDate>", body)
    assert match is not None
    sign, hours, minutes = offset[0], int(offset[1:3]), int(offset[4:6])
    delta = timedelta(hours=hours, minutes=minutes) * (1 if sign == "+" else -1)
    moment = datetime.fromisoformat(match.group(1).decode()) + delta
    text = moment.replace(tzinfo=None).isoformat(timespec="seconds") + offset
    return body.replace(match.group(0), f"<responseDate>{text}</responseDate>".encode())


def repository(
    items: int = 12,
    per_page: int = 4,
    retry_after: str | None = None,
    expire_page: int | None = None,
    repeat_page: int | None = None,
    broken: int | None = None,
    size_offset: int = 0,
    delay: float = 0.0,
    relist: int | None = None,
    order: str | None = None,
    expire_always: bool = False,
    error_status: int = 200,
    offset: str | None = None,
    earliest: str = "2024-05-01",
    identify_error: str | None = None,
    headerless: int | None = None,
    forbidden_page: int | None = None,
    formats: str | None = None,
) -> WSGIApp:
    lock = threading.Lock()
    stamps = {n: (date(2024, 5, 1) + timedelta(days=n // 3)).isoformat() for n in range(items)}
    titles = {n: f"Item {n}" for n in range(items)}
    deleted: set[int] = set()
    log: list[str] = []
    flags = {"failed": retry_after is None, "expired": expire_page is None}
    live: dict[str, int | None] = {"forbidden_page": forbidden_page, "expire_always": expire_always}

    def header(n: int) -> str:
        status = ' status="deleted"' if n in deleted else ""
        identifier = "" if n == headerless else f"<identifier>oai:repo.test:{n}</identifier>"
        return (
            f"<header{status}>{identifier}"
            f"<datestamp>{stamps[n]}</datestamp><setSpec>col_{n % 2}</setSpec></header>"
        )

    def record(n: int, base: str, verb: str = "ListRecords") -> str:
        if verb == "ListIdentifiers":
            return header(n)
        if n in deleted:
            return f"<record>{header(n)}</record>"
        title = f"Broken & {n}" if n == broken else titles[n]
        return (
            f"<record>{header(n)}<metadata>{DC}<dc:title>{title}</dc:title>"
            f"<dc:identifier>{base}/items/{n}</dc:identifier>"
            f"<dc:identifier>doi:10.1234/{n}</dc:identifier>"
            f"<dc:relation>{base.replace('127.0.0.1', 'localhost')}/cited</dc:relation>"
            f"</oai_dc:dc></metadata></record>"
        )

    def changed(text: str, n: int) -> str:
        """Item ``n``'s record as changed while the list is read."""
        later = f"<datestamp>{date.today().isoformat()}</datestamp>"
        text = text.replace(f"<datestamp>{stamps[n]}</datestamp>", later)
        return text.replace(
            f"<dc:title>{titles[n]}</dc:title>", f"<dc:title>{titles[n]}, changed</dc:title>"
        )

    def selected(args: dict[str, str]) -> list[int]:
        lo, hi, spec = args.get("from", ""), args.get("until", "9999"), args.get("set")
        ordered = sorted(
            range(items), key=lambda n: (stamps[n], n), reverse=order == "newest-first"
        )
        if order == "shuffled":  # each page's items older than the page before's newest
            ordered = [ordered[i] for i in sorted(range(items), key=lambda i: (i % 2, i))]
        return [n for n in ordered if lo <= stamps[n] <= hi and (spec in (None, f"col_{n % 2}"))]

    def list_records(args: dict[str, str], base: str, verb: str) -> str:
        token = args.pop("resumptionToken", None)
        page = 0
        if token is not None:
            query, _, number = token.rpartition("|")
            args = dict(p.split("=", 1) for p in query.split("&") if p)
            page = int(number)
            if live["expire_always"] or (page == expire_page and not flags["expired"]):
                flags["expired"] = True
                return error_element("badResumptionToken", "expired")
        if args.get("metadataPrefix") != "oai_dc":
            return error_element("cannotDisseminateFormat", "only oai_dc")
        chosen = selected(args)
        if not chosen:
            return error_element("noRecordsMatch", "none")
        rows = chosen[page * per_page : (page + 1) * per_page]
        body = "".join(record(n, base, verb) for n in rows)
        if page == 1 and relist is not None:
            body = changed(record(relist, base, verb), relist) + body
        query = "&".join(f"{k}={v}" for k, v in sorted(args.items()))
        more = (page + 1) * per_page < len(chosen)
        next_page = page if page == repeat_page else page + 1
        text = f"{query}|{next_page}" if more else ""
        size = len(chosen) + size_offset
        if more or page:
            body += (
                f'<resumptionToken completeListSize="{size}" cursor="{page * per_page}">'
                f"{escape(text)}</resumptionToken>"
            )
        return f"<{verb}>{body}</{verb}>"

    def oai(environ: Environ, start_response: StartResponse) -> list[bytes]:
        args = _args(environ)
        base = f"http://{environ['HTTP_HOST']}"
        verb = args.pop("verb", "")
        if verb == "ListRecords" and not flags["failed"]:
            flags["failed"] = True
            later = datetime.now(UTC) + timedelta(seconds=1)
            wait = "1" if retry_after == "seconds" else format_datetime(later, usegmt=True)
            return _respond(
                start_response, b"busy", "503 Busy", "text/plain", [("Retry-After", wait)]
            )
        if live["forbidden_page"] is not None and verb == "ListRecords":
            token = args.get("resumptionToken", "|0")
            if int(token.rpartition("|")[2]) == live["forbidden_page"]:
                return _respond(start_response, b"<h1>Forbidden</h1>", "403 Forbidden", "text/html")
        if verb == "Identify":
            inner = identify(base + "/oai", earliest)
            if identify_error is not None:
                inner = error_element(identify_error, "not here")
        elif verb in ("ListRecords", "ListIdentifiers"):
            time.sleep(delay if verb == "ListRecords" else 0.0)
            inner = list_records(dict(args), base, verb)
        elif verb == "ListMetadataFormats":
            inner = metadata_formats(formats)
        else:
            inner = error_element("badVerb", verb)
        body = envelope(base + "/oai", {"verb": verb, **args}, inner)
        body = body if offset is None else shifted(body, offset)
        status = "200 OK"
        if inner.startswith("<error") and error_status != 200:
            status = f"{error_status} Unprocessable Entity"
        return _respond(start_response, body, status)

    def resource(environ: Environ, start_response: StartResponse, path: str) -> list[bytes]:
        base = f"http://{environ['HTTP_HOST']}"
        number = path.rsplit("/", 1)[1].split(".")[0]
        if not number.isdigit() or int(number) not in titles:
            return _respond(start_response, b"no", "404 Not Found", "text/plain")
        n = int(number)
        extra: list[tuple[str, str]] = []
        if path.startswith("/items/"):
            body = (
                f"<html><head><title>{titles[n]}</title>"
                f'<meta name="citation_pdf_url" content="{base}/files/{n}.pdf">'
                "</head><body>landing</body></html>"
            ).encode()
            kind = "text/html; charset=utf-8"
            extra = [
                (
                    "Link",
                    f'</files/{n}.csv>; rel="item"; type="text/csv", <{base}{path}>; rel="cite-as"',
                )
            ]
        elif path.endswith(".pdf"):
            body, kind = b"%PDF-1.4 item " + number.encode() + b"\n%%EOF\n", "application/pdf"
        else:
            body, kind = f"n,title\n{n},{titles[n]}\n".encode(), "text/csv"
        etag = f'"{abs(hash(body))}"'
        if environ.get("HTTP_IF_NONE_MATCH") == etag:
            start_response("304 Not Modified", [("ETag", etag)])
            return []
        return _respond(start_response, body, "200 OK", kind, [("ETag", etag), *extra])

    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        with lock:
            if not path.startswith("/_"):
                query = environ.get("QUERY_STRING", "")
                log.append(f"{path}?{query}" if query else path)
            if path.startswith("/_change/"):
                n = int(path.rsplit("/", 1)[1])
                stamps[n], titles[n] = datetime.now(UTC).date().isoformat(), f"Item {n}, revised"
                return _respond(start_response, b"ok", content_type="text/plain")
            if path.startswith("/_delete/"):
                n = int(path.rsplit("/", 1)[1])
                stamps[n] = datetime.now(UTC).date().isoformat()
                deleted.add(n)
                return _respond(start_response, b"ok", content_type="text/plain")
            if path == "/_quirk":  # turned on at run time: the same endpoint, now quirky
                live.update({k: int(v) for k, v in _args(environ).items() if k in live})
                return _respond(start_response, b"ok", content_type="text/plain")
            if path == "/_log":
                return _respond(
                    start_response, json.dumps(log).encode(), content_type="application/json"
                )
            if path == "/oai":
                return oai(environ, start_response)
        if path == "/cited":  # named by every record under another host name: localhost
            return _respond(start_response, b"cited", content_type="text/plain")
        if path.startswith(("/items/", "/files/")):
            return resource(environ, start_response, path)
        return _respond(start_response, b"not found", "404 Not Found", "text/plain")

    return app
