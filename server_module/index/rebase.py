"""A new base URL: every identifier is renamed, and the old ones become deleted records.

Identifiers are URLs built from the base URL (:func:`~server_module.records.make_identifier`).
Identify promises ``deletedRecord=persistent`` (OAI-PMH 2.0 §2.5.1), so an identifier once
given out never just disappears: when the base URL changes, each old identifier is kept as a
deleted record stamped with the second the change became known, and each file becomes a new
item under its new identifier, stamped the same, so a harvest ``from`` its last responseDate
learns both.

A retired identifier keeps a row of the ``files`` table (so lists, counts and GetRecord need
nothing new) under the relative path ``RETIRED + identifier``: no file name holds a NUL byte,
so no file of the walk ever matches it. An identifier that comes back into use (the base URL
changed back) is a live item again. Called inside a write transaction of
:mod:`server_module.index.writer`; like that module, this one speaks SQL.
"""

from __future__ import annotations

import logging
import sqlite3

from server_module.records import make_identifier

log = logging.getLogger(__name__)

RETIRED = b"\x00"  # relative-path prefix of a retired identifier's row
_FILES = b"\x01"  # every file's relative path sorts at or after this, every retired one before

_RETIRE_COPY = """
INSERT INTO files (relpath, identifier, size, mtime_ns, ctime_ns, inode, sha1, sha256,
                   mime, mime_major, title, datestamp, deleted)
SELECT ?, ?, size, mtime_ns, ctime_ns, inode, sha1, sha256, mime, mime_major, title, ?, 1
FROM files WHERE rowid = ?
"""


def retired_relpath(identifier: str) -> bytes:
    """The relative path under which a retired identifier's row is kept.

    >>> retired_relpath("http://old.example/a.html")
    b'\\x00http://old.example/a.html'
    """
    return RETIRED + identifier.encode()


def rebase(conn: sqlite3.Connection, base_url: str, now: int) -> int:
    """Identify every file under ``base_url``, and record it as the index's base URL; retire
    each identifier that changes, as a deleted record stamped ``now`` (a deletion already
    recorded keeps its datestamp). Return how many identifiers were retired."""
    rows = conn.execute(
        "SELECT rowid, relpath, identifier, deleted FROM files WHERE relpath >= ?", (_FILES,)
    ).fetchall()
    moved = [(r, make_identifier(base_url, r[1])) for r in rows]
    moved = [(row, new) for row, new in moved if new != row[2]]
    live = [(row[0], row[2], new) for row, new in moved if not row[3]]
    # A recorded deletion simply moves aside: its file's next version gets a new identifier.
    conn.executemany(
        "UPDATE files SET relpath = ? WHERE rowid = ?",
        [(retired_relpath(row[2]), row[0]) for row, _ in moved if row[3]],
    )
    # Free the old identifiers for their deleted records, then retire them.
    conn.executemany(
        "UPDATE files SET identifier = ' ' || rowid WHERE rowid = ?", [(r,) for r, _, _ in live]
    )
    conn.executemany(_RETIRE_COPY, [(retired_relpath(old), old, now, r) for r, old, _ in live])
    conn.executemany(
        "DELETE FROM files WHERE relpath < ? AND identifier = ?",
        [(_FILES, new) for _, new in moved],
    )
    conn.executemany(
        "UPDATE files SET identifier = ?, datestamp = ? WHERE rowid = ?",
        [(new, now, r) for r, _, new in live],
    )
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('base_url', ?)", (base_url,))
    if moved:
        log.warning("base URL is now %s: %d old identifiers retired", base_url, len(moved))
    return len(moved)
