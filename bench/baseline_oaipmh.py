"""The peer of ``bench provider``: the best ListIdentifiers server the ``oaipmh`` package allows.

``oaipmh.server.BatchingServer`` over an in-memory list of the same headers, read once from the
provider's own :class:`~server_module.index.fileindex.FileIndex` and already in (datestamp,
identifier)
order, so a page is a slice at the token's cursor. A minimal WSGI app hands the arguments (of
the query, or of a POST's form body) to ``handleRequest`` and returns its bytes; gunicorn
serves it with one sync worker, as the provider is served.

``python -m bench.baseline_oaipmh INDEX DOCROOT --base-url URL --port P --page-size N``
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from gunicorn.app.base import BaseApplication
from oaipmh import common, error
from oaipmh.server import BatchingServer

from server_module.index.fileindex import FileIndex
from server_module.records import set_specs_for

OAI_DC = (
    "oai_dc",
    "http://www.openarchives.org/OAI/2.0/oai_dc.xsd",
    "http://www.openarchives.org/OAI/2.0/oai_dc/",
)


def load_headers(index_path: Path, docroot: Path, base_url: str) -> list[common.Header]:
    """Every header of the index, in the provider's (datestamp, identifier) order."""
    with FileIndex(index_path, docroot, base_url) as index, index.snapshot() as snap:
        rows = snap.headers(limit=snap.count())
    return [
        common.Header(None, ident, _naive_utc(stamp), list(set_specs_for(mime)), bool(deleted))
        for ident, stamp, deleted, mime in rows
    ]


def _naive_utc(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC).replace(tzinfo=None)  # oaipmh wants naive UTC


class SortedHeaders:
    """An ``IBatchingOAI`` over a pre-sorted header list; only ListIdentifiers has items."""

    def __init__(self, headers: list[common.Header], base_url: str) -> None:
        self.headers = headers
        earliest = headers[0].datestamp() if headers else datetime(1970, 1, 1)
        self._identify = common.Identify(
            "baseline",
            base_url,
            "2.0",
            ["webmaster@localhost"],
            earliest,
            "persistent",
            "YYYY-MM-DDThh:mm:ssZ",
            ["identity"],
        )

    def identify(self) -> common.Identify:
        return self._identify

    def listMetadataFormats(self, identifier: str | None = None) -> list[tuple[str, str, str]]:
        return [OAI_DC]

    def listSets(self, cursor: int = 0, batch_size: int = 10) -> list[tuple[str, str, None]]:
        raise error.NoSetHierarchyError("not part of the benchmark")

    def listIdentifiers(
        self,
        metadataPrefix: str,
        set: str | None = None,
        from_: datetime | None = None,
        until: datetime | None = None,
        cursor: int = 0,
        batch_size: int = 10,
    ) -> list[common.Header]:
        if metadataPrefix != OAI_DC[0]:
            raise error.CannotDisseminateFormatError(metadataPrefix)
        if set is None and from_ is None and until is None:
            return self.headers[cursor : cursor + batch_size]
        selected = [h for h in self.headers if _matches(h, set, from_, until)]
        return selected[cursor : cursor + batch_size]

    def listRecords(self, metadataPrefix: str, **kw: Any) -> list[object]:
        raise error.NoRecordsMatchError("not part of the benchmark")

    def getRecord(self, metadataPrefix: str, identifier: str) -> object:
        raise error.IdDoesNotExistError(identifier)


def _matches(
    header: common.Header, set_spec: str | None, from_: datetime | None, until: datetime | None
) -> bool:
    stamp = header.datestamp()
    return (
        (set_spec is None or set_spec in header.setSpec())
        and (from_ is None or stamp >= from_)
        and (until is None or stamp <= until)
    )


def wsgi_app(server: BatchingServer) -> Callable[..., list[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., object]) -> list[bytes]:
        query = environ.get("QUERY_STRING", "")
        if environ.get("REQUEST_METHOD") == "POST":  # as the oaipmh client sends by default
            length = int(environ.get("CONTENT_LENGTH") or 0)
            query = environ["wsgi.input"].read(length).decode("latin-1")
        args = dict(parse_qsl(query, keep_blank_values=True))
        body = server.handleRequest(args)
        start_response(
            "200 OK",
            [("Content-Type", "text/xml; charset=UTF-8"), ("Content-Length", str(len(body)))],
        )
        return [body]

    return app


class BaselineServer(BaseApplication):  # type: ignore[misc]
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        super().__init__()

    def load_config(self) -> None:
        self.cfg.set("bind", f"{self.args.host}:{self.args.port}")
        self.cfg.set("workers", 1)
        self.cfg.set("worker_class", "sync")
        self.cfg.set("timeout", 120)

    def load(self) -> Callable[..., list[bytes]]:
        a = self.args
        headers = load_headers(a.index, a.docroot, a.base_url)
        repo = SortedHeaders(headers, f"http://{a.host}:{a.port}/oai")
        return wsgi_app(BatchingServer(repo, resumption_batch_size=a.page_size))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path)
    parser.add_argument("docroot", type=Path)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--page-size", type=int, default=1000)
    BaselineServer(parser.parse_args(argv)).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
