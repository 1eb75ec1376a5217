"""The index's write side: a refresh's changes, a batch of plugin results, or a new base URL,
in one transaction each.

A write transaction takes SQLite's write lock first (``BEGIN IMMEDIATE``) and stamps every
row it writes with the clock's second at that moment, never earlier than a datestamp already
given out: OAI-PMH 2.0 §2.7.1 wants the date a change became known to the repository, not a
file's mtime. A list's first page waits for a transaction in flight to commit
(``snapshot(settled=True)`` in :mod:`server_module.index.fileindex`), so no row lands behind its
responseDate. Before it commits, a transaction that changed what the protocol shows also
keeps the item counts per MIME type (so a first page need not count) and bumps the
generation (:mod:`server_module.lists.pagecache`). A removed file keeps its row with
``deleted = 1`` (§2.5.1, persistent deletion). Plugin results come after the rows, in
batches (:mod:`server_module.index.analyser`): each batch moves the datestamps of the files
it describes, whose records changed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from coop_common.analysis import Analysis
from server_module.index.changes import Changes, Known
from server_module.index.rebase import rebase
from server_module.index.schema import meta
from server_module.plugins import store

Clock = Callable[[], float]

_UPSERT = """
INSERT INTO files (relpath, identifier, size, mtime_ns, ctime_ns, inode, sha1, sha256,
                   mime, mime_major, title, datestamp, deleted)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
ON CONFLICT (relpath) DO UPDATE SET
    identifier = excluded.identifier, size = excluded.size, mtime_ns = excluded.mtime_ns,
    ctime_ns = excluded.ctime_ns, inode = excluded.inode, sha1 = excluded.sha1,
    sha256 = excluded.sha256, mime = excluded.mime, mime_major = excluded.mime_major,
    title = excluded.title, datestamp = excluded.datestamp, deleted = 0
"""


def known_rows(conn: sqlite3.Connection) -> Iterator[Known]:
    """Every row, in relative-path order (the UNIQUE index's: no sort, nothing held)."""
    rows = conn.execute(
        "SELECT relpath, size, mtime_ns, ctime_ns, inode, sha256, deleted FROM files"
        " ORDER BY relpath"
    )
    return map(Known._make, rows)


def write_changes(conn: sqlite3.Connection, plan: Changes, clock: Clock) -> None:
    """All of a refresh's changes in one short transaction, stamped with the second it took
    the lock in; new or changed files leave the plugins' work incomplete (``plugin_labels``,
    :mod:`server_module.plugins.survey`)."""
    with _transaction(conn):
        now = _stamp(conn, clock)
        conn.executemany(_UPSERT, [(*row, now) for row in sorted(plan.upserts)])
        conn.executemany("UPDATE files SET ctime_ns = ?, inode = ? WHERE relpath = ?", plan.touches)
        conn.executemany(
            "UPDATE files SET deleted = 1, datestamp = ? WHERE relpath = ?",
            [(now, rel) for rel in plan.deletions],
        )
        if plan.upserts:
            conn.execute("DELETE FROM meta WHERE key = 'plugin_labels'")
        if plan.upserts or plan.deletions:
            store.prune(conn)
            _store_counts(conn)
            _bump_generation(conn)


def write_analyses(conn: sqlite3.Connection, analyses: Sequence[Analysis], clock: Clock) -> None:
    """A batch of plugin results; each present file they describe has a new record, so a new
    datestamp (OAI-PMH 2.0 §2.7.1): the second this transaction took the lock in."""
    if not analyses:
        return
    with _transaction(conn):
        now = _stamp(conn, clock)
        store.save(conn, analyses)
        conn.executemany(
            "UPDATE files SET datestamp = ? WHERE sha256 = ? AND deleted = 0",
            [(now, sha) for sha in sorted({a.sha256 for a in analyses})],
        )
        _bump_generation(conn)


def finish_analyses(conn: sqlite3.Connection, labels: str, done: Callable[[], bool]) -> bool:
    """Record that the plugin set ``labels`` has analysed every file, if ``done()`` still says
    so under the write lock (no refresh brought files in since); whether it did."""
    with _transaction(conn):
        if not done():
            return False
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('plugin_labels', ?)", (labels,)
        )
        return True


def adopt_base_url(conn: sqlite3.Connection, base_url: str, clock: Clock) -> None:
    """Make ``base_url`` the index's, retiring the identifiers it changes (:mod:`rebase`)."""
    with _transaction(conn):
        if meta(conn, "base_url") != base_url and rebase(conn, base_url, _stamp(conn, clock)):
            _store_counts(conn)
            _bump_generation(conn)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction that holds the write lock from its start; rolled back on error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _stamp(conn: sqlite3.Connection, clock: Clock) -> int:
    """The clock's second, but never before a datestamp already given out."""
    (latest,) = conn.execute("SELECT max(datestamp) FROM files").fetchone()
    return max(int(clock()), latest or 0)


def _store_counts(conn: sqlite3.Connection) -> None:
    """Items per MIME type, kept with each refresh so a first page need not count them."""
    counts = dict(conn.execute("SELECT mime, count(*) FROM files GROUP BY mime").fetchall())
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('mime_counts', ?)", (json.dumps(counts),)
    )


def _bump_generation(conn: sqlite3.Connection) -> None:
    """Count the refreshes that changed what the protocol shows (see :mod:`pagecache`)."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('generation', 1)"
        " ON CONFLICT (key) DO UPDATE SET value = value + 1"
    )
