"""A repository built on the ``oaipmh`` package's server, with ``oai:`` identifiers.

``oaipmh_repository(items)`` is a WSGI factory for :func:`tests.servers.start_wsgi`: the
package's :class:`oaipmh.server.Server` (its own resumption tokens, 10 records a page) over
``items`` oai_dc records whose ``dc:identifier`` is a landing page on the same server
(``/items/<n>``), which names its PDF only in a ``citation_pdf_url`` meta tag.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from oaipmh import common, error
from oaipmh.metadata import MetadataRegistry
from oaipmh.server import Server, oai_dc_writer

from tests.oai_apps import Environ, StartResponse, WSGIApp, _args, _respond

OAI_DC = (
    "oai_dc",
    "http://www.openarchives.org/OAI/2.0/oai_dc.xsd",
    "http://www.openarchives.org/OAI/2.0/oai_dc/",
)


class Catalogue:
    """An ``IOAI`` over ``items`` records; item 2 is deleted."""

    def __init__(self, base: str, items: int) -> None:
        self.base = base
        self.items = items

    def identify(self) -> common.Identify:
        return common.Identify(
            "oaipmh package repository", self.base + "/oai", "2.0", ["a@pkg.test"],
            datetime(2024, 1, 1), "persistent", "YYYY-MM-DDThh:mm:ssZ", ["identity"],
        )  # fmt: skip

    def listMetadataFormats(self, identifier: str | None = None) -> list[tuple[str, str, str]]:
        return [OAI_DC]

    def listSets(self, **kw: Any) -> list[object]:
        raise error.NoSetHierarchyError("no sets")

    def _header(self, n: int) -> common.Header:
        stamp = datetime(2024, 3, 1 + n % 20, 12, 0, 0)
        return common.Header(None, f"oai:pkg.test:{n}", stamp, ["articles"], n == 2)

    def _selected(self, from_: datetime | None, until: datetime | None) -> list[int]:
        stamps = {n: self._header(n).datestamp() for n in range(self.items)}
        return [
            n
            for n in sorted(range(self.items), key=lambda n: (stamps[n], n))
            if (from_ is None or stamps[n] >= from_) and (until is None or stamps[n] <= until)
        ]

    def listIdentifiers(
        self,
        metadataPrefix: str,
        set: str | None = None,
        from_: datetime | None = None,
        until: datetime | None = None,
    ) -> list[common.Header]:
        return [self._header(n) for n in self._selected(from_, until)]

    def listRecords(
        self,
        metadataPrefix: str,
        set: str | None = None,
        from_: datetime | None = None,
        until: datetime | None = None,
    ) -> list[tuple[Any, Any, None]]:
        if metadataPrefix != "oai_dc":
            raise error.CannotDisseminateFormatError(metadataPrefix)
        return [self._record(n) for n in self._selected(from_, until)]

    def getRecord(self, metadataPrefix: str, identifier: str) -> tuple[Any, Any, None]:
        return self._record(int(identifier.rsplit(":", 1)[1]))

    def _record(self, n: int) -> tuple[Any, Any, None]:
        header = self._header(n)
        if header.isDeleted():
            return header, None, None
        fields = {
            "title": [f"Article {n}"],
            "creator": [f"Author {n % 3}"],
            "identifier": [f"{self.base}/items/{n}", f"urn:nbn:test-{n}"],
        }
        return header, common.Metadata(None, fields), None


def oaipmh_repository(items: int = 25) -> WSGIApp:
    lock = threading.Lock()
    servers: dict[str, Server] = {}

    def server_for(base: str) -> Server:
        with lock:
            if base not in servers:
                registry = MetadataRegistry()
                registry.registerWriter("oai_dc", oai_dc_writer)
                servers[base] = Server(Catalogue(base, items), registry)
            return servers[base]

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        base, path = f"http://{environ['HTTP_HOST']}", environ.get("PATH_INFO", "")
        if path == "/oai":
            return _respond(start_response, server_for(base).handleRequest(_args(environ)))
        number = path.rsplit("/", 1)[-1].split(".")[0]
        if path.startswith("/items/") and number.isdigit():
            page = f'<html><head><meta name="citation_pdf_url" content="/files/{number}.pdf">'
            return _respond(
                start_response, (page + "</head></html>").encode(), content_type="text/html"
            )
        if path.startswith("/files/") and number.isdigit():
            return _respond(
                start_response, b"%PDF-1.4 " + number.encode(), content_type="application/pdf"
            )
        return _respond(start_response, b"not found", "404 Not Found", "text/plain")

    return app
