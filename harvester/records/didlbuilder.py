"""Item DIDL records built in a second process, while the first lists and stores the next page.

With ``--linked none`` an item's DIDL record needs nothing but what the state already holds
(its header and formats), so making its text, digest and gzip member (about half of records
mode's CPU per item) can run on another core. :class:`DidlBuilder` starts one child process
(``python -m harvester.records.didlbuilder``: not :mod:`multiprocessing`'s spawn, which would
run the parent's main script again, nor a fork of a threaded process) and sends it, over its
stdin and stdout, one page's items at a time, as plain tuples (cheap to pickle); it answers
with each record's ID, date and gzip member, in order: the child draws the record IDs (random
UUIDs, like the writer's) and one WARC-Date for the page's records. The parent writes them as
one group and settles the items as before: an item stays ``pending`` in the state until its
record is written, so a killed run finishes it on the next one. The child ends when its pipe
closes (the parent closed it, or died).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from multiprocessing.connection import Connection

from harvester.archive.didl import OaiHeaderInfo, Provenance, deletion_didl
from harvester.archive.metarecord import metadata_member
from harvester.archive.records import _warc_date
from harvester.clock import utcnow
from harvester.records.itemdidl import item_didl
from harvester.records.randomids import uuid4_texts

log = logging.getLogger(__name__)


# One item: identifier, datestamp, sets, deleted, and its formats (prefix, metadata XML).
Job = tuple[str, str, tuple[str, ...], bool, list[tuple[str, bytes]]]
# One record made: WARC-Record-ID, WARC-Date and the gzip member.
Built = tuple[str, str, bytes]


class DidlBuilder:
    """A child process making item DIDL records; :meth:`send` then :meth:`receive`, in turn."""

    def __init__(self) -> None:
        argv = [sys.executable, "-m", "harvester.records.didlbuilder"]
        self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._process.stdin is not None and self._process.stdout is not None
        self._out = Connection(os.dup(self._process.stdin.fileno()), readable=False)
        self._in = Connection(os.dup(self._process.stdout.fileno()), writable=False)
        self._process.stdin.close()
        self._process.stdout.close()
        self._waiting = False

    def send(self, provenance: Provenance, endpoint: str | None, jobs: Sequence[Job]) -> None:
        """Hand over one group's items, listed from ``endpoint``; :meth:`receive` must come
        before the next send."""
        assert not self._waiting, "receive the last group first"
        self._out.send((provenance, endpoint, list(jobs)))
        self._waiting = True

    def receive(self) -> list[Built]:
        """The records of the group sent last, in its order."""
        self._waiting = False
        built: list[Built] = self._in.recv()
        return built

    def close(self) -> None:
        """Close the pipe; the child then ends."""
        self._out.close()
        self._in.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            log.warning("the DIDL builder did not stop; killing it")
            self._process.kill()
            self._process.wait()


def serve(incoming: Connection, outgoing: Connection) -> None:
    """The child: build each group received until the pipe closes."""
    while True:
        try:
            provenance, endpoint, jobs = incoming.recv()
        except (EOFError, OSError):
            return
        outgoing.send(build(provenance, endpoint, jobs))


def build(provenance: Provenance, endpoint: str | None, jobs: Sequence[Job]) -> list[Built]:
    """Each item's record, with a new record ID; the group's records share one WARC-Date,
    the moment they were made."""
    date = _warc_date(utcnow())
    return [
        (record_id, date, metadata_member(_didl(job, endpoint, provenance), record_id, date))
        for job, record_id in zip(jobs, record_ids(len(jobs)), strict=True)
    ]


def record_ids(count: int) -> list[str]:
    """``count`` new WARC-Record-IDs: random UUID URNs in angle brackets."""
    return [f"<urn:uuid:{text}>" for text in uuid4_texts(count)]


def _didl(job: Job, endpoint: str | None, provenance: Provenance) -> bytes:
    identifier, datestamp, specs, deleted, formats = job
    oai = OaiHeaderInfo(identifier, datestamp, specs, endpoint, deleted=deleted)
    if deleted:
        now = datetime.now(UTC)
        return deletion_didl(
            identifier, observed=now, oai=oai, provenance=provenance, previous=None
        )
    return item_didl(oai, formats, [], provenance)


if __name__ == "__main__":
    serve(Connection(0, writable=False), Connection(1, readable=False))
