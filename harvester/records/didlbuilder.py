"""Item DIDL records built in other processes, while the first lists and stores the next pages.

With ``--linked none`` an item's DIDL record needs nothing but what the state already holds
(its header and formats), so making its text, digest and gzip member (about half of records
mode's CPU per item, and the run's widest stage) can run on other cores. :class:`DidlBuilder`
starts one child process (``python -m harvester.records.didlbuilder``: not
:mod:`multiprocessing`'s spawn, which would run the parent's main script again, nor a fork of a
threaded process) and sends it, over its stdin and stdout, one page's items at a time, as plain
tuples (cheap to pickle); it answers with each record's ID, date and gzip member, in order: the
child draws the record IDs (random UUIDs, like the writer's) and one WARC-Date for the page's
records. Both pipes are widened to hold a page's group (Linux), so a hand-over returns at
once. :class:`DidlBuilders` hands the pages to several such children in turn. The parent
writes each page's records as one group and settles the items as before: an item stays
``pending`` in the state until its record is written, so a killed run finishes it on the next
one. A child ends when its pipe closes (the parent closed it, or died).
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from queue import SimpleQueue

from harvester.archive.didl import OaiHeaderInfo, Provenance, deletion_didl
from harvester.archive.randomids import uuid4_texts
from harvester.archive.recordbytes import record_member
from harvester.archive.records import _warc_date
from harvester.clock import utcnow
from harvester.exceptions import ArchiveError
from harvester.records.itemdidl import Frame, frame, plain_item_didl

log = logging.getLogger(__name__)
PIPE_BYTES = 1 << 20  # a page's group in one write: Linux's default pipe-max-size


# One item: identifier, datestamp, sets, deleted, and its formats (prefix, metadata XML).
Job = tuple[str, str, tuple[str, ...], bool, list[tuple[str, bytes]]]
# One record made: WARC-Record-ID, WARC-Date and the gzip member.
Built = tuple[str, str, bytes]


class DidlBuilder:
    """A child process making item DIDL records; groups are made in the order sent, and
    :meth:`receive` answers the oldest group not yet received."""

    def __init__(self) -> None:
        argv = [sys.executable, "-m", "harvester.records.didlbuilder"]
        self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if self._process.stdin is None or self._process.stdout is None:
            raise ArchiveError("the DIDL builder's pipes did not open")
        for pipe in (self._process.stdin, self._process.stdout):
            _widen(pipe.fileno())
        self._out = Connection(os.dup(self._process.stdin.fileno()), readable=False)
        self._in = Connection(os.dup(self._process.stdout.fileno()), writable=False)
        self._process.stdin.close()
        self._process.stdout.close()
        self.pending = 0  # groups sent and not yet received

    @property
    def pid(self) -> int:
        return self._process.pid

    def send(self, provenance: Provenance, endpoint: str | None, jobs: Sequence[Job]) -> None:
        """Hand over one group's items, listed from ``endpoint``. The child reads every
        group as it comes, so a send never waits for a :meth:`receive`."""
        self._out.send((provenance, endpoint, list(jobs)))
        self.pending += 1

    def receive(self) -> list[Built]:
        """The records of the oldest group not yet received, in its order."""
        if not self.pending:
            raise ArchiveError("a DIDL group was asked for that was never sent")
        built: list[Built] = self._in.recv()
        self.pending -= 1
        return built

    def close(self) -> None:
        """Close the pipes; the child then ends."""
        self._out.close()
        self._in.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            log.warning("the DIDL builder did not stop; killing it")
            self._process.kill()
            self._process.wait()


def _widen(fd: int) -> None:
    """Let the pipe hold a whole group (Linux): a 64 KB pipe makes the writer wait for the
    reader's every chunk, and the child's reading thread waits for its GIL at each one."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError) as exc:  # not Linux, or above the system's limit
        log.debug("pipe kept at its size: %s", exc)


class DidlBuilders:
    """``size`` builders taking the groups in turn: the records are made on as many cores
    as there are builders. :meth:`receive` answers the oldest group not yet received."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._builders = [DidlBuilder() for _ in range(size)]
        self._turn = 0
        self._order: deque[DidlBuilder] = deque()  # who makes each group, oldest first

    def send(self, provenance: Provenance, endpoint: str | None, jobs: Sequence[Job]) -> None:
        builder = self._builders[self._turn]
        self._turn = (self._turn + 1) % self.size
        builder.send(provenance, endpoint, jobs)
        self._order.append(builder)

    def receive(self) -> list[Built]:
        return self._order.popleft().receive()

    def close(self) -> None:
        for builder in self._builders:
            builder.close()


def serve(incoming: Connection, outgoing: Connection) -> None:
    """The child: build each group received, in order, until the pipe closes or the parent
    stops reading. A thread reads the groups as they come, so the parent's send of one
    group never waits for its receive of the last (both pipes full would block both)."""
    groups: SimpleQueue[tuple[Provenance, str | None, list[Job]] | None] = SimpleQueue()
    threading.Thread(target=_read, args=(incoming, groups), daemon=True).start()
    while (group := groups.get()) is not None:
        try:
            outgoing.send(build(*group))
        except OSError:  # the parent closed its end
            return


def _read(
    incoming: Connection, groups: SimpleQueue[tuple[Provenance, str | None, list[Job]] | None]
) -> None:
    while True:
        try:
            groups.put(incoming.recv())
        except (EOFError, OSError):
            groups.put(None)
            return


def _member(didl: bytes, record_id: str, date: str) -> bytes:
    return record_member(
        "metadata", (record_id, date), "", (), content_type="application/xml", payload=didl
    )


def build(provenance: Provenance, endpoint: str | None, jobs: Sequence[Job]) -> list[Built]:
    """Each item's record, with a new record ID; the group's records share one WARC-Date,
    the moment they were made."""
    date = _warc_date(utcnow())
    count = len(jobs)
    uuids = uuid4_texts(2 * count)  # the records' IDs, then the DIDL documents'
    shared = frame(endpoint, provenance)
    built = []
    for job, record_uuid, document_uuid in zip(jobs, uuids[:count], uuids[count:], strict=True):
        record_id = f"<urn:uuid:{record_uuid}>"
        didl = _didl(job, endpoint, provenance, (shared, document_uuid))
        built.append((record_id, date, _member(didl, record_id, date)))
    return built


def record_ids(count: int) -> list[str]:
    """``count`` new WARC-Record-IDs: random UUID URNs in angle brackets."""
    return [f"<urn:uuid:{text}>" for text in uuid4_texts(count)]


def _didl(
    job: Job, endpoint: str | None, provenance: Provenance, named: tuple[Frame, str]
) -> bytes:
    """The job's DIDL record; ``named`` is the group's :func:`frame` and the document's UUID
    (a deletion note draws its own)."""
    identifier, datestamp, specs, deleted, formats = job
    if deleted:
        now = datetime.now(UTC)
        oai = OaiHeaderInfo(identifier, datestamp, specs, endpoint, deleted=True)
        return deletion_didl(
            identifier, observed=now, oai=oai, provenance=provenance, previous=None
        )
    return plain_item_didl((identifier, datestamp, specs), formats, *named)


if __name__ == "__main__":
    serve(Connection(0, writable=False), Connection(1, readable=False))
