"""``bench ingest``: records mode against ``oaipmh-scythe``, listing the same repository.

A repository of N records with ``oai:`` identifiers (:func:`repository`, 100 records a page,
served from one process on loopback) is listed twice, alternately: by ``harvester harvest
URL --mode records --linked none`` (every page archived in WARC, one DIDL record per item,
the state kept) and by ``oaipmh-scythe`` writing every record's XML to one file. Both wait on
the same server. Each pair runs ``REPEATS`` times, alternately, at N/10 and at N; reported
are the medians of records/s, peak RSS and CPU seconds (user and system, the child's own and
its waited-for children's: our DIDL builder) per 10,000 records, the ratio of the medians,
and the load average before each size (other work on the machine moves records/s, and CPU
seconds less).

``python -m bench ingest [RECORDS [REPEATS [PAGE_MS,...]]]`` (default 100000, 3, "0,20"): each
size is measured with the repository answering a list page at once (about a millisecond: the
two clients' own CPU is all that is measured) and after 20 ms, the time a fast real
repository takes for its query (DSpace, EPrints and Invenio take 100 ms to seconds a page).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from bench.harness import ChildRun, Report, median, run_child
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


def repository(items: int = 1000, page_ms: float = 0.0) -> Callable[..., Iterable[bytes]]:
    """A fast OAI-PMH repository of ``items`` oai_dc records; tokens are page numbers. Each
    list page is answered after ``page_ms`` milliseconds."""

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
        if page_ms:
            time.sleep(page_ms / 1000)
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


Measure = tuple[float, float, float]  # records/s, peak RSS (MB), CPU s per 10,000 records


def _measure(records: int, run: ChildRun) -> Measure:
    cpu = run.usage.ru_utime + run.usage.ru_stime
    return records / run.seconds, run.usage.ru_maxrss / 1024, cpu / records * 10_000


def _ours(url: str, out: Path) -> Measure:
    shutil.rmtree(out, ignore_errors=True)
    argv = [sys.executable, "-m", "harvester.cli", "harvest", url, "--out", str(out),
            "--mode", "records", "--linked", "none", "--quiet", "--json"]  # fmt: skip
    run = run_child(argv, OUT / "ours.out", OUT / "ours.err", timeout=TIMEOUT, cwd=REPO)
    return _measure(json.loads(run.stdout.strip().splitlines()[-1])["records"], run)


def _scythe(url: str, out: Path) -> Measure:
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", SCYTHE, url, str(out)]
    run = run_child(argv, OUT / "scythe.out", OUT / "scythe.err", timeout=TIMEOUT, cwd=REPO)
    return _measure(int(run.stdout.strip()), run)


def _medians(runs: list[Measure]) -> list[float]:
    return [median([run[n] for run in runs]) for n in range(3)]


def run(args: list[str]) -> Report:
    total = int(args[0]) if args else 100_000
    repeats = int(args[1]) if len(args) > 1 else 3
    latencies = [float(ms) for ms in (args[2] if len(args) > 2 else "0,20").split(",")]
    columns = ["page ms", "records", "tool", "records/s", "peak RSS (MB)", "CPU s per 10k", "load"]
    report = Report("ingest", columns)
    for page_ms in latencies:
        for items in (total // 10, total):
            _one_size(report, items, page_ms, repeats)
    report.notes.append(
        f"medians of {repeats} alternating runs; ratio = our records/s over oaipmh-scythe's,"
        " same server, same list; page ms = how long the repository takes to answer a list"
        " page; load = 1-minute load average before each size"
    )
    return report


def _one_size(report: Report, items: int, page_ms: float, repeats: int) -> None:
    load = round(os.getloadavg()[0], 2)
    kwargs = {"items": items, "page_ms": page_ms}
    with start_wsgi("bench.ingest:repository", kwargs, ready_path="/") as server:
        url = server.url + "/oai"
        ours: list[Measure] = []
        peer: list[Measure] = []
        for _ in range(repeats):
            ours.append(_ours(url, OUT / f"ours-{items}"))
            peer.append(_scythe(url, OUT / f"scythe-{items}.xml"))
    mine, theirs = _medians(ours), _medians(peer)
    report.rows += [
        [page_ms, items, "harvester (records)", *mine, load],
        [page_ms, items, "oaipmh-scythe", *theirs, load],
    ]
    key = f"{items}_{page_ms:g}ms"
    report.figures[f"ratio_{key}"] = round(mine[0] / theirs[0], 3)
    report.figures[f"rss_mb_{key}"] = round(mine[1], 1)
    report.figures[f"cpu_per_10k_{key}"] = round(mine[2], 2)
    report.figures[f"scythe_cpu_per_10k_{key}"] = round(theirs[2], 2)
