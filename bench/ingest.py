"""``bench ingest``: records mode against ``oaipmh-scythe``, listing the same repository.

A repository of N records with ``oai:`` identifiers (:func:`repository`, 100 records a page,
served from one process on loopback) is listed twice, alternately: by ``harvester harvest
URL --mode records --linked none`` (every page archived in WARC, one DIDL record per item,
the state kept) and by ``oaipmh-scythe`` writing every record's XML to one file. Both wait on
the same server. Reported: records/s and peak RSS of each, at N and at N/10 (flat in the
list's length is the goal).

``python -m bench ingest [RECORDS]`` (default 100000).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from bench.harness import Report, run_child
from tests.servers import start_wsgi

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "ingest"
PER_PAGE = 100
TIMEOUT = 1800.0
NS = "http://www.openarchives.org/OAI/2.0/"
SCYTHE = """
import sys
from oaipmh_scythe import Scythe
with Scythe(sys.argv[1]) as scythe, open(sys.argv[2], "w", encoding="utf-8") as out:
    count = 0
    for record in scythe.list_records(metadata_prefix="oai_dc"):
        out.write(record.raw)
        count += 1
print(count)
"""


def repository(items: int = 1000) -> Callable[..., Iterable[bytes]]:
    """A fast OAI-PMH repository of ``items`` oai_dc records; tokens are page numbers."""

    def record(n: int) -> str:
        return (
            f"<record><header><identifier>oai:bench.test:{n}</identifier><datestamp>"
            f"2024-05-{1 + n % 28:02d}</datestamp><setSpec>col_{n % 4}</setSpec></header>"
            '<metadata><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/"'
            ' xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f"<dc:title>Record {n} of the benchmark repository</dc:title>"
            f"<dc:creator>Author {n % 97}</dc:creator><dc:date>2024</dc:date>"
            f"<dc:identifier>http://bench.test/items/{n}</dc:identifier>"
            "</oai_dc:dc></metadata></record>"
        )

    def body(args: dict[str, str]) -> str:
        verb = args.get("verb")
        if verb == "Identify":
            return (
                "<Identify><repositoryName>bench</repositoryName><baseURL>http://bench.test/oai"
                "</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>a@bench.test"
                "</adminEmail><earliestDatestamp>2024-05-01</earliestDatestamp><deletedRecord>"
                "no</deletedRecord><granularity>YYYY-MM-DD</granularity></Identify>"
            )
        token = args.get("resumptionToken", "0")
        page = int(token) if token.isdigit() else 0
        rows = range(page * PER_PAGE, min((page + 1) * PER_PAGE, items))
        more = (page + 1) * PER_PAGE < items
        resumption = (
            f'<resumptionToken completeListSize="{items}" cursor="{page * PER_PAGE}">'
            f"{page + 1 if more else ''}</resumptionToken>"
        )
        return f"<ListRecords>{''.join(record(n) for n in rows)}{resumption}</ListRecords>"

    def app(environ: dict[str, Any], start_response: Callable[..., object]) -> list[bytes]:
        args = dict(parse_qsl(environ.get("QUERY_STRING", "")))
        data = (
            f'<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="{NS}"><responseDate>'
            f"2024-06-01T00:00:00Z</responseDate><request>http://bench.test/oai</request>"
            f"{body(args)}</OAI-PMH>"
        ).encode()
        start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(data)))])
        return [data]

    return app


def _ours(url: str, out: Path) -> tuple[float, float]:
    shutil.rmtree(out, ignore_errors=True)
    argv = [sys.executable, "-m", "harvester.cli", "harvest", url, "--out", str(out),
            "--mode", "records", "--linked", "none", "--quiet", "--json"]  # fmt: skip
    run = run_child(argv, OUT / "ours.out", OUT / "ours.err", timeout=TIMEOUT, cwd=REPO)
    records = json.loads(run.stdout.strip().splitlines()[-1])["records"]
    return records / run.seconds, run.usage.ru_maxrss / 1024


def _scythe(url: str, out: Path) -> tuple[float, float]:
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", SCYTHE, url, str(out)]
    run = run_child(argv, OUT / "scythe.out", OUT / "scythe.err", timeout=TIMEOUT, cwd=REPO)
    return int(run.stdout.strip()) / run.seconds, run.usage.ru_maxrss / 1024


def run(args: list[str]) -> Report:
    total = int(args[0]) if args else 100_000
    report = Report("ingest", ["records", "tool", "records/s", "peak RSS (MB)"])
    for items in (total // 10, total):
        with start_wsgi("bench.ingest:repository", {"items": items}, ready_path="/") as server:
            url = server.url + "/oai"
            ours = _ours(url, OUT / f"ours-{items}")
            peer = _scythe(url, OUT / f"scythe-{items}.xml")
        report.rows += [[items, "harvester (records)", *ours], [items, "oaipmh-scythe", *peer]]
        report.figures[f"ratio_{items}"] = round(ours[0] / peer[0], 3)
        report.figures[f"rss_mb_{items}"] = round(ours[1], 1)
    report.notes.append("ratio = our records/s over oaipmh-scythe's, same server, same list")
    return report
