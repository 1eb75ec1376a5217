"""What a collection report shows, read from the WARC files and the state (``report.py``).

From the WARCs, record headers and HTTP status lines only, in one pass per file:

* captures: every ``response``, ``revisit`` and ``resource`` record with a target URI, at its
  WARC-Date, with its host, MIME type (the HTTP Content-Type without parameters, or the
  record's for a resource), HTTP status and stored bytes (the record's Content-Length);
  responses of the OAI-PMH exchanges a ``didl`` harvest keeps are not captures of the site;
* requests: every ``request`` record, at its WARC-Date, by host (request rates);
* a crawl's per-URL ``metadata`` records (``application/warc-fields``): the fetch time
  (``fetchTimeMs``, request to the end of the body) for latencies, and each ``outlink``, the
  moment a URL was first discovered.

From the state: failures by reason (``status.reason``). From the run log: the runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from harvester.collection.folder import Collection
from harvester.collection.status import reason
from harvester.run.runlog import Run

CAPTURES = ("response", "revisit", "resource")
_FIELDS_LIMIT = 1 << 22  # bytes of a crawl metadata record read (its outlinks)


@dataclass(frozen=True)
class Capture:
    at: datetime
    url: str
    kind: str  # response | revisit | resource
    mime: str
    status: int | None
    size: int

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc


@dataclass(frozen=True)
class Fetched:
    """A crawled URL's fetch: when it was recorded, and how long it took."""

    at: datetime
    host: str
    ms: int


@dataclass
class ReportData:
    captures: list[Capture] = field(default_factory=list)
    requests: list[tuple[datetime, str]] = field(default_factory=list)  # (when, host)
    fetches: list[Fetched] = field(default_factory=list)
    discovered: dict[str, datetime] = field(default_factory=dict)  # URL -> first seen
    failures: Counter[str] = field(default_factory=Counter)  # by reason
    failure_statuses: Counter[str] = field(default_factory=Counter)  # failed, gone, abandoned
    runs: list[Run] = field(default_factory=list)
    warc_files: int = 0

    @property
    def crawled(self) -> bool:
        return bool(self.fetches)


def collect(folders: Sequence[Path]) -> ReportData:
    """Everything the report shows, for one collection or several together."""
    data = ReportData()
    for folder in folders:
        collection = Collection.at(folder)
        exchanges: set[str] = set()
        for path in collection.warcs():
            _read_warc(path, data, exchanges)
            data.warc_files += 1
        data.captures = [c for c in data.captures if c.url not in exchanges]
        data.runs += collection.runs.runs()
        with collection.state() as state:
            if state is not None:
                for site in state.sites():
                    for row in state.failures(site):
                        data.failures[reason(*row)] += 1
                        data.failure_statuses[row[0]] += 1
    data.captures.sort(key=lambda c: c.at)
    data.requests.sort()
    data.fetches.sort(key=lambda f: f.at)
    return data


def _read_warc(path: Path, data: ReportData, exchanges: set[str]) -> None:
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            headers = record.rec_headers
            uri = headers.get_header("WARC-Target-URI") or ""
            at = _date(headers.get_header("WARC-Date"))
            if record.rec_type in CAPTURES and uri:
                data.captures.append(_capture(record, uri, at))
            elif record.rec_type == "request" and uri:
                data.requests.append((at, urlsplit(uri).netloc))
            elif record.rec_type == "metadata" and record.content_type == "application/warc-fields":
                _read_fields(record, uri, at, data, exchanges)


def _capture(record: ArcWarcRecord, uri: str, at: datetime) -> Capture:
    http = record.http_headers
    mime = (http.get_header("Content-Type") if http else None) or record.content_type or ""
    status = int(http.get_statuscode()) if http and http.get_statuscode().isdigit() else None
    size = int(record.rec_headers.get_header("Content-Length") or 0)
    return Capture(at, uri, record.rec_type, mime.split(";")[0].strip().lower(), status, size)


def _read_fields(
    record: ArcWarcRecord, uri: str, at: datetime, data: ReportData, exchanges: set[str]
) -> None:
    text = record.content_stream().read(_FIELDS_LIMIT).decode("utf-8", errors="replace")
    for line in text.splitlines():
        name, _, value = line.partition(":")
        value = value.strip()
        if name == "oai-exchange":
            exchanges.add(value)
        elif name == "fetchTimeMs" and uri and value.isdigit():
            data.fetches.append(Fetched(at, urlsplit(uri).netloc, int(value)))
        elif name == "outlink" and value:
            data.discovered.setdefault(value, at)
    if uri:
        data.discovered.setdefault(uri, at)


def _date(value: str | None) -> datetime:
    return datetime.fromisoformat((value or "1970-01-01T00:00:00Z").replace("Z", "+00:00"))
