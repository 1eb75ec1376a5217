"""Reading a WARC file against the standard, with tools this project did not write.

``fastwarc_check`` has FastWARC verify every block digest and every payload digest a record
holds;
``broken_rules`` reads every record with warcio against the rules of WARC 1.1 that issue 32
found broken: a capture's request and response share one WARC-Date (section 5.4), a
metadata record has no WARC-Payload-Digest (section 5.9), every record of an HTTP exchange
(a resource carried in an ``oai_didl`` record too; not a ``urn:`` record a tool made, such
as a page's screenshot) names the IP address it came from (section 5.20), and a revisit's
HTTP head answers as its original did (200, not 304), so that replay serves it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator

FASTWARC = Path(sys.executable).parent / "fastwarc"
PAYLOAD_TYPES = WarcRecordType.response | WarcRecordType.request
EXCHANGE_TYPES = ("request", "response", "revisit", "resource")


def fastwarc_check(path: Path) -> list[str]:
    """FastWARC's complaints about ``path``: its ``check`` command (every block digest), and
    the payload digest of every ``response`` and ``request`` record. Not a revisit's: it
    names the payload of the record it revisits, which it does not hold, and ``check -p``
    tests it against the empty payload, failing every revisit of every tool. Nor a
    ``resource`` record's, which FastWARC fails whatever it holds (it finds no payload without
    an HTTP head): its payload is its block, so its payload digest must be its block digest,
    which FastWARC checks."""
    cli = subprocess.run(
        [str(FASTWARC), "check", "-q", str(path)], capture_output=True, timeout=120, check=False
    )
    failed = [f"fastwarc check exited {cli.returncode}"] if cli.returncode else []
    with open(path, "rb") as fh:
        for rec in FastIterator(fh, record_types=WarcRecordType.any_type, parse_http=False):
            if not rec.verify_block_digest():
                failed.append(f"{rec.record_type} {rec.record_id}: block digest")
            if rec.record_type == WarcRecordType.resource and rec.headers.get(
                "WARC-Payload-Digest"
            ) not in (None, rec.headers.get("WARC-Block-Digest")):
                failed.append(f"{rec.record_type} {rec.record_id}: payload digest")
    with open(path, "rb") as fh:
        for rec in FastIterator(fh, record_types=PAYLOAD_TYPES, parse_http=True):
            if not rec.verify_payload_digest():
                failed.append(f"{rec.record_type} {rec.record_id}: payload digest")
    return failed


def broken_rules(path: Path) -> list[str]:
    """One line per broken rule in ``path``: the record's type, ID and what it breaks."""
    dates: dict[str, str] = {}
    concurrent: list[tuple[str, str, str]] = []
    broken = []
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            head = rec.rec_headers
            rec_id, kind = head.get_header("WARC-Record-ID"), rec.rec_type
            dates[rec_id] = head.get_header("WARC-Date")
            where = f"{kind} {rec_id} {head.get_header('WARC-Target-URI')}"
            if kind == "metadata" and head.get_header("WARC-Payload-Digest"):
                broken.append(f"{where}: metadata with WARC-Payload-Digest (5.9)")
            addressed = head.get_header("WARC-IP-Address")
            fetched = (head.get_header("WARC-Target-URI") or "").startswith(("http:", "https:"))
            if kind in EXCHANGE_TYPES and fetched and not addressed:
                broken.append(f"{where}: no WARC-IP-Address (5.20)")
            if kind == "request" and head.get_header("WARC-Concurrent-To"):
                concurrent.append((where, head.get_header("WARC-Concurrent-To"), dates[rec_id]))
            if kind == "revisit" and rec.http_headers is not None:
                status = rec.http_headers.get_statuscode()
                if status == "304":
                    broken.append(f"{where}: revisit replays as {status}")
    for where, other, date in concurrent:
        if other in dates and dates[other] != date:
            broken.append(f"{where}: WARC-Date {date} differs from its response's (5.4)")
    return broken
