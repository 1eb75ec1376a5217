"""A harvest that never finished (Ctrl-C, SIGKILL, a crash), as the commands that read its
collection meet it: ``status``, ``verify``, ``report``, ``wacz``, ``didl``.

A killed harvest leaves its last WARC file ``.open`` (its records in no index, some of its
captures unknown to the state) and its run without an end line in ``runs.jsonl``. Reading
such a collection as it lies would report success on what is missing. :func:`settle` first
does what the next harvest would do:

* when it can take the collection's lock (no harvest running), it repairs each ``.open``
  file (cut back to its last whole record group, renamed), tells the state of the captures
  in it (:func:`~harvester.archive.recovery.reconcile`), indexes the repaired files, and
  ends each unfinished run with an ``end`` line marked ``interrupted`` (no exit code: the
  process never chose one);
* when the collection cannot be written (a read-only disk or folder), an ``.open`` file is
  :class:`~harvester.exceptions.InterruptedCollection` (exit 1), naming it;
* while a harvest holds the lock, its ``.open`` files are being written: nothing is
  interrupted, and the commands read the finished files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from harvester.archive.cdx.index import CdxIndex
from harvester.archive.recovery import ends_group, reconcile, recovered
from harvester.archive.repair import repair_open_files
from harvester.collection.folder import Collection
from harvester.exceptions import CollectionInUse, InterruptedCollection
from harvester.run.lock import CollectionLock
from harvester.run.runlog import Run

log = logging.getLogger(__name__)
MAIN_INDEX = "index.cdxj"


@dataclass(frozen=True)
class Settled:
    """What :func:`settle` did to one collection."""

    repaired: int = 0  # WARC files repaired
    recovered: int = 0  # captures the state learnt of
    runs: int = 0  # unfinished runs ended as interrupted


def settle(folder: Path) -> Settled:
    """Finish, as the next harvest would, a harvest that was interrupted in ``folder``."""
    collection = Collection(folder)
    left_open = collection.open_warcs()
    runs = collection.runs.runs()
    unfinished = [run for run in runs if run.end is None]
    if not left_open and not unfinished:
        return Settled()
    if not collection.writable:
        if left_open:
            names = ", ".join(p.name for p in left_open)
            raise InterruptedCollection(
                f"{folder}: an interrupted harvest left {names} unfinished; the collection "
                "is read-only, so it cannot be repaired here: run harvester harvest on it, "
                "or on a writable copy"
            )
        return Settled()
    if any(_held(lock) for lock in folder.glob("harvest-*.lock")):
        return Settled()  # a worker of a shared job is running
    try:
        with CollectionLock(folder):
            return _repair(collection, unfinished, runs[-1] if runs else None)
    except CollectionInUse:
        return Settled()  # a harvest is running: its .open files are being written


def _repair(collection: Collection, unfinished: list[Run], last: Run | None) -> Settled:
    """Repair as the next harvest would; ``last`` (the last run) says how its captures count
    (a crawl's are remembered, a listed run's archived)."""
    repaired = repair_open_files(collection.warc_dir, group_end=ends_group)
    learnt = 0
    if repaired:
        found = recovered(repaired)
        with collection.state() as state:
            if state is not None and last is not None:
                learnt = reconcile(state, last.site, found, archive=last.mode != "crawl")
        CdxIndex(collection.index_dir / MAIN_INDEX).add_warcs(repaired)
    for run in unfinished:
        collection.runs.interrupted(run.run)
    if repaired or unfinished:
        log.warning(
            "%s: finished an interrupted harvest: repaired %d WARC files, recovered %d "
            "captures, ended %d runs",
            collection.folder,
            len(repaired),
            learnt,
            len(unfinished),
        )
    return Settled(len(repaired), learnt, len(unfinished))


def _held(path: Path) -> bool:
    """Whether another process holds the lock file ``path``."""
    name = path.name
    try:
        with CollectionLock(path.parent, name):
            return False
    except CollectionInUse:
        return True
