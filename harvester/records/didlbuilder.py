"""Item DIDL records built in a second process, while the first lists and stores the next page.

With ``--linked none`` an item's DIDL record needs nothing but what the state already holds
(its header and formats), so making its text, digest and gzip member (about half of records
mode's CPU per item) can run on another core. :class:`DidlBuilder` starts one child process
(``python -m harvester.records.didlbuilder``: not :mod:`multiprocessing`'s spawn, which
would run the parent's main script again, nor a fork of a threaded process) and sends it,
over its stdin and stdout, one page's items at a time, with their record IDs and dates from
the writer; it answers with each record's gzip member, in order. The parent writes them as one group
and settles the items as before: an item stays ``pending`` in the state until its record is
written, so a killed run finishes it on the next one. The child ends when its pipe closes
(the parent closed it, or died).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection

from harvester.archive.didl import OaiHeaderInfo, Provenance, deletion_didl
from harvester.archive.metarecord import metadata_member
from harvester.records.itemdidl import item_didl

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemJob:
    """One item's record to make: its OAI header, formats, and WARC-Record-ID and date."""

    oai: OaiHeaderInfo
    formats: list[tuple[str, bytes]]
    record_id: str
    warc_date: str


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

    def send(self, provenance: Provenance, jobs: Sequence[ItemJob]) -> None:
        """Hand over one group's items; :meth:`receive` must come before the next send."""
        assert not self._waiting, "receive the last group first"
        self._out.send((provenance, list(jobs)))
        self._waiting = True

    def receive(self) -> list[bytes]:
        """The gzip members of the group sent last, in its order."""
        self._waiting = False
        members: list[bytes] = self._in.recv()
        return members

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
            provenance, jobs = incoming.recv()
        except (EOFError, OSError):
            return
        outgoing.send([_member(job, provenance) for job in jobs])


def _member(job: ItemJob, provenance: Provenance) -> bytes:
    if job.oai.deleted:
        now = datetime.now(UTC)
        didl = deletion_didl(
            job.oai.identifier, observed=now, oai=job.oai, provenance=provenance, previous=None
        )
    else:
        didl = item_didl(job.oai, job.formats, [], provenance)
    return metadata_member(didl, job.record_id, job.warc_date)


if __name__ == "__main__":
    serve(Connection(0, writable=False), Connection(1, readable=False))
