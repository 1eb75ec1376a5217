"""The DIDL builder processes of records mode: a group handed over never waits for the child."""

from __future__ import annotations

import gzip
import os
import re
import signal
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

from harvester.archive.didl import OaiHeaderInfo, Provenance, deletion_didl
from harvester.archive.warc import RotatingWARCWriter
from harvester.records.didlbuilder import Built, DidlBuilder, Job
from harvester.records.itemdidl import item_didl
from tests.test_metarecord import members

PROVENANCE = Provenance(
    "coop-archive-harvester", "test", datetime(2024, 6, 1, tzinfo=UTC), None, "oai-records"
)
UUID_URN = "<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>"
ENDPOINT = "http://repo.test/oai?a=b&c=d\u00e9"
# Items as varied as a repository sends: sets, several formats, none, a deletion, text that
# needs escaping or is not ASCII, metadata with white space around it, and one record larger
# than what is compressed in one call.
VARIED: list[Job] = [
    ("oai:repo.test:1", "2024-05-01", (), False, [("oai_dc", b"<dc>plain</dc>")]),
    (
        "oai:r:<&>\u00e9\r\x01",
        "2024-05-01T10:00:00Z",
        ("a", "b&c", "d<e>", "\u00e9t\u00e9"),
        False,
        [
            ("oai_dc", "\u2003 \n<dc>caf\u00e9 &amp; \U0001f600</dc>\n\u00a0".encode()),
            ("mods", b'<m xmlns="urn:m">&lt;x&gt; "q"</m>'),
            ('x&"y', b"<x/>"),
        ],
    ),
    ("oai:repo.test:gone", "2024-05-02", ("a",), True, []),
    ("oai:repo.test:bare", "2024-05-03", ("a",), False, []),
    ("oai:repo.test:big", "2024-05-04", (), False, [("oai_dc", b"<dc>" + b"y" * 70000 + b"</dc>")]),
]


def _jobs(count: int) -> list[Job]:
    return [
        (f"oai:t:{n}", "2024-05-01", (), False, [("oai_dc", b"<dc>%d%s</dc>" % (n, b"x" * 1000))])
        for n in range(count)
    ]


def test_a_large_group_is_handed_over_while_the_child_is_stopped() -> None:
    """A page's group (here 300 KB) fits in the pipe: the parent's send returns at once even
    when the child gets no CPU, instead of waiting for the child to read it chunk by chunk."""
    builder = DidlBuilder()
    jobs = _jobs(300)
    os.kill(builder.pid, signal.SIGSTOP)
    try:
        sender = threading.Thread(target=builder.send, args=(PROVENANCE, None, jobs))
        sender.start()
        sender.join(5)
        handed_over = not sender.is_alive()
    finally:
        os.kill(builder.pid, signal.SIGCONT)
    sender.join(10)
    built = builder.receive()
    builder.close()
    assert handed_over
    assert [len(b) for b in built] == [3] * 300
    assert b"oai:t:299" in gzip.decompress(built[-1][2])


def test_the_builders_records_are_the_reference_layouts_byte_for_byte(tmp_path: Path) -> None:
    """Each record the builder makes of a varied group is, once decompressed, the record warcio
    writes of the DIDL that :mod:`harvester.archive.didl` lays out statement by statement,
    with the same record ID, date and document ID (and a deletion's observed time)."""
    builder = DidlBuilder()
    try:
        builder.send(PROVENANCE, ENDPOINT, VARIED)
        built = builder.receive()
    finally:
        builder.close()
    ours = [gzip.decompress(member) for _id, _date, member in built]
    didls = [_reference_didl(job, record) for job, record in zip(VARIED, ours, strict=True)]
    assert ours == _reference_records(tmp_path, built, didls)
    names = [record_id for record_id, _date, _member in built]
    names += [f"<{_named(record, 'DIDLDocumentId')}>" for record in ours]
    assert all(re.fullmatch(UUID_URN, name) for name in names)
    uuids = {uuid.UUID(name[10:-1]) for name in names}
    assert {u.version for u in uuids} == {4} and len(uuids) == 2 * len(VARIED)


def _reference_didl(job: Job, record: bytes) -> bytes:
    """The job's DIDL as the general layout makes it, named as the builder named ``record``'s."""
    identifier, datestamp, specs, deleted, formats = job
    document_id = _named(record, "DIDLDocumentId")
    oai = OaiHeaderInfo(identifier, datestamp, specs, ENDPOINT, deleted=deleted)
    if deleted:
        observed = datetime.fromisoformat(_named(record, "observed"))
        return deletion_didl(
            identifier,
            observed=observed,
            oai=oai,
            provenance=PROVENANCE,
            previous=None,
            document_id=document_id,
        )
    return item_didl(oai, formats, [], PROVENANCE, document_id=document_id)


def _reference_records(directory: Path, built: list[Built], didls: list[bytes]) -> list[bytes]:
    """warcio's metadata records of ``didls``, with the IDs and the date of ``built``."""
    (date,) = {warc_date for _id, warc_date, _member in built}
    # the records are made first, then the file's warcinfo record, which takes the last ID
    ids = iter([*(record_id for record_id, _date, _member in built), "<urn:uuid:warcinfo>"])
    writer = RotatingWARCWriter(
        directory, clock=lambda: datetime.fromisoformat(date), make_id=ids.__next__
    )
    writer.open()
    written = writer.write_group([writer.metadata_record(didl) for didl in didls])
    path = writer.current_path
    assert path is not None
    made = members(path, written)
    writer.close()
    return made


def _named(record: bytes, attribute: str) -> str:
    found = re.search(rb' %s="([^"]+)"' % attribute.encode(), record)
    assert found is not None
    return found.group(1).decode()
