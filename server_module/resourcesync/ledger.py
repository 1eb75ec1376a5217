"""The ResourceSync ledger: what the file index held at each look, and every change between.

The file index keeps one row per file, its latest version only; a Change List needs more: was
a version ``created`` or ``updated`` (§12.1), and what came before. The ledger, an SQLite file
of its own beside the index, follows the index: :meth:`Ledger.sync` reads the index rows whose
datestamp is at or after the last one it took in (the index stamps every new version and
deletion with the second it was written, so none is missed), and appends one change per new
version or deletion, stamped with that datestamp. Its first sync is the baseline: every live
file, no change.

It also holds each version's MD5, which the reference client ``resync`` checks with
``--checksum`` and the index does not keep: read once per new version, in the same pass that
checks the file still has the SHA-256 the index recorded (else the MD5 is left out).

Changes are grouped into runs: the static command closes one per invocation (one Change List
each); the served provider keeps one open run. Only this module of the ResourceSync package
speaks SQL.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from server_module.index.fileindex import FileIndex
from server_module.index.snapshot import Selection, Snapshot
from server_module.records import FileRecord
from server_module.resourcesync.documents import Entry

Opener = Callable[[bytes], BinaryIO | None]
PAGE = 1000  # index rows read per query during a sync

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS resources (
    identifier TEXT PRIMARY KEY, datestamp INTEGER NOT NULL, deleted INTEGER NOT NULL,
    lastmod INTEGER NOT NULL, length INTEGER NOT NULL, mime TEXT NOT NULL,
    sha1 TEXT NOT NULL, sha256 TEXT NOT NULL, md5 TEXT
);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, identifier TEXT NOT NULL,
    change TEXT NOT NULL, at INTEGER NOT NULL, lastmod INTEGER, length INTEGER, mime TEXT,
    sha1 TEXT, sha256 TEXT, md5 TEXT
);
CREATE INDEX IF NOT EXISTS changes_by_run ON changes (run, seq);
CREATE TABLE IF NOT EXISTS runs (run INTEGER PRIMARY KEY, until INTEGER NOT NULL);
"""
_COLUMNS = "identifier, lastmod, length, mime, sha1, sha256, md5"


@dataclass(frozen=True, slots=True)
class Run:
    """A run's changes, and when it was closed (None while open)."""

    run: int
    count: int
    until: int | None


def default_ledger_path(index_path: Path) -> Path:
    """Beside the index: ``.site.oai-index.sqlite`` -> ``.site.oai-index.resourcesync.sqlite``."""
    return index_path.with_name(index_path.stem + ".resourcesync.sqlite")


class Ledger:
    """Open with :meth:`open`; :meth:`sync` from the index, then read with :meth:`reader`."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock

    def open(self) -> Ledger:
        with closing(self._connect()) as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_SCHEMA)
        return self

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    # -- following the index ------------------------------------------------------------

    def sync(self, index: FileIndex, opener: Opener, *, close_run: bool = False) -> int:
        """Take in what the index changed since the last sync; return how many changes.

        With ``close_run``, a run that has changes is closed now: its Change List is final.
        """
        with index.snapshot(settled=True) as snap, closing(self._connect()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                generation = snap.generation()
                added = 0
                if _meta(conn, "generation") != generation:
                    added = _Sync(conn, opener).take(snap)
                    _set_meta(conn, "generation", generation)
                if close_run:
                    self._close_run(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return added

    def _close_run(self, conn: sqlite3.Connection) -> None:
        run = _meta(conn, "run") or 1
        if conn.execute("SELECT 1 FROM changes WHERE run = ? LIMIT 1", (run,)).fetchone():
            conn.execute("INSERT INTO runs (run, until) VALUES (?, ?)", (run, int(self.clock())))
            _set_meta(conn, "run", run + 1)

    # -- reading ------------------------------------------------------------------------

    @contextmanager
    def reader(self) -> Iterator[LedgerReader]:
        """One consistent read of the ledger."""
        with closing(self._connect()) as conn:
            conn.execute("BEGIN")
            try:
                yield LedgerReader(conn)
            finally:
                conn.execute("COMMIT")


class _Sync:
    """One sync's pass over the index rows at or after the last datestamp taken in."""

    def __init__(self, conn: sqlite3.Connection, opener: Opener) -> None:
        self.conn = conn
        self.opener = opener
        self.baseline = _meta(conn, "synced") is None
        self.run = _meta(conn, "run") or 1
        self.added = 0

    def take(self, snap: Snapshot) -> int:
        since = _meta(self.conn, "synced")
        after: tuple[int, str] | None = None
        newest = since
        while True:
            records = snap.records(Selection(start=since, after=after), limit=PAGE)
            for record in records:
                self._apply(record)
                newest = max(newest or 0, record.datestamp)
            if len(records) < PAGE:
                break
            after = (records[-1].datestamp, records[-1].identifier)
        if self.baseline:
            _set_meta(self.conn, "baseline", newest or 0)
        _set_meta(self.conn, "synced", newest or 0)
        return self.added

    def _apply(self, record: FileRecord) -> None:
        stored = self.conn.execute(
            "SELECT datestamp, deleted FROM resources WHERE identifier = ?", (record.identifier,)
        ).fetchone()
        if record.deleted:
            if stored is not None and not stored[1]:
                self.conn.execute(
                    "UPDATE resources SET deleted = 1, datestamp = ? WHERE identifier = ?",
                    (record.datestamp, record.identifier),
                )
                self._change(Entry(record.identifier), "deleted", record.datestamp)
            return
        if stored is not None and not stored[1] and stored[0] == record.datestamp:
            return  # this version is in already
        row = Entry(
            record.identifier,
            record.mtime_ns // 1_000_000_000,
            record.size,
            record.mime,
            record.sha1,
            record.sha256,
            self._md5(record),
        )
        self.conn.execute(
            "INSERT OR REPLACE INTO resources (identifier, datestamp, deleted, lastmod, length,"
            " mime, sha1, sha256, md5) VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?)",
            (row.loc, record.datestamp, *_values(row)[1:]),
        )
        new = stored is None or bool(stored[1])
        self._change(row, "created" if new else "updated", record.datestamp)

    def _change(self, row: Entry, change: str, at: int) -> None:
        if self.baseline:
            return
        self.conn.execute(
            f"INSERT INTO changes (run, change, at, {_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.run, change, at, *_values(row)),
        )
        self.added += 1

    def _md5(self, record: FileRecord) -> str | None:
        """The file's MD5, if it still holds the version the index hashed."""
        handle = self.opener(record.relpath)
        if handle is None:
            return None
        md5, sha256 = hashlib.md5(usedforsecurity=False), hashlib.sha256()
        with handle:
            while chunk := handle.read(1 << 16):
                md5.update(chunk)
                sha256.update(chunk)
        return md5.hexdigest() if sha256.hexdigest() == record.sha256 else None


class LedgerReader:
    """Reads of one ledger transaction: the live resources, the runs and their changes."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def baseline(self) -> int | None:
        return _meta(self.conn, "baseline")

    def live_count(self) -> int:
        (count,) = self.conn.execute("SELECT count(*) FROM resources WHERE deleted = 0").fetchone()
        return int(count)

    def live(self, offset: int, limit: int) -> list[Entry]:
        """Live resources in identifier order."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM resources WHERE deleted = 0 ORDER BY identifier"
            " LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [Entry(*row) for row in rows]

    def runs(self) -> list[Run]:
        """Every run with changes, in order."""
        rows = self.conn.execute(
            "SELECT changes.run, count(*), runs.until FROM changes"
            " LEFT JOIN runs ON runs.run = changes.run GROUP BY changes.run ORDER BY changes.run"
        )
        return [Run(*row) for row in rows]

    def changes(self, run: int, offset: int, limit: int) -> list[Entry]:
        """A run's changes in the order they were taken in."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS}, change, at FROM changes WHERE run = ? ORDER BY seq"
            " LIMIT ? OFFSET ?",
            (run, limit, offset),
        )
        return [Entry(*row) for row in rows]


def _values(row: Entry) -> tuple[object, ...]:
    return (row.loc, row.lastmod, row.length, row.mime, row.sha1, row.sha256, row.md5)


def _meta(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


def _set_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
