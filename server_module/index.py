"""The file index: which files of the site are OAI-PMH items, and since when.

One row per file ever seen under the document root, keyed by its relative path (bytes, so
names that are not UTF-8 work), and one per identifier a new base URL retired
(:mod:`server_module.rebase`). A refresh walks the tree (:mod:`server_module.scan`) and the
rows side by side, both in byte order of the path, holding only the changes
(:mod:`server_module.changes`); it hashes only files whose stat changed, and writes every
change in one short SQLite transaction. The second that transaction takes the write lock in
is the datestamp of each new version or deletion (a list's first page waits for such a
transaction to commit: :meth:`FileIndex.snapshot`): OAI-PMH 2.0 §2.7.1 wants the date a
change became known to the repository, so a harvester asking ``from=<its last harvest>``
misses nothing even when ``cp -p`` or ``rsync -a`` bring in files with old mtimes. Deleted
files keep their row with ``deleted = 1`` (§2.5.1, persistent deletion).

Reading goes through :meth:`FileIndex.snapshot`: a read transaction on a per-thread connection,
so a ``count`` and the page after it see one committed state (WAL mode keeps readers and the
refresh out of each other's way). Only this module and its helper :mod:`server_module.rebase`
speak SQL.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from server_module.changes import Changes, Known, RefreshStats, find_changes
from server_module.exceptions import IndexSchemaError
from server_module.rebase import rebase
from server_module.records import FileRecord, mime_for_set_spec, set_specs_for
from server_module.scan import DEFAULT_EXCLUDES, Found, OutsideLink, Scanner

__all__ = [
    "DEFAULT_EXCLUDES",
    "FileIndex",
    "IndexSchemaError",
    "RefreshStats",
    "Snapshot",
    "default_index_path",
]

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
# A file whose ctime is this close to the scan may change again within the same timestamp
# tick (coarse kernel clocks; 1 s on some file systems) without its stat changing: store its
# ctime as 0 so the next refresh hashes it once more (git's "racily clean" problem).
RACY_WINDOW_NS = 2_000_000_000
# The index's own files, should the index live inside the document root.
INDEX_SUFFIXES = (b"", b"-wal", b"-shm", b"-journal", b".lock")

Header = tuple[str, int, int, str]  # identifier, datestamp, deleted, mime

_SCHEMA = f"""
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    relpath BLOB NOT NULL UNIQUE,
    identifier TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    sha1 TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    mime TEXT NOT NULL,
    mime_major TEXT NOT NULL,
    title TEXT,
    datestamp INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
-- Covering indexes: a page of headers is read from the index alone, in (datestamp, id) order.
CREATE INDEX IF NOT EXISTS files_by_date ON files (datestamp, identifier, deleted, mime);
CREATE INDEX IF NOT EXISTS files_by_major
    ON files (mime_major, datestamp, identifier, deleted, mime);
CREATE INDEX IF NOT EXISTS files_by_mime ON files (mime, datestamp, identifier, deleted);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
INSERT OR IGNORE INTO meta (key, value) VALUES ('secret', randomblob(32));
COMMIT;
"""
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
_RECORD_COLUMNS = (
    "identifier, relpath, datestamp, deleted, size, mtime_ns, mime, sha1, sha256, title"
)


def default_index_path(docroot: str | os.PathLike[str]) -> Path:
    """The index beside (never inside) the document root.

    >>> str(default_index_path("/srv/www/site/"))
    '/srv/www/.site.oai-index.sqlite'
    """
    root = Path(os.path.abspath(docroot))
    if not root.name:
        raise ValueError("the file system root needs an explicit index path")
    return root.parent / f".{root.name}.oai-index.sqlite"


def _filters(
    start: int | None, until: int | None, set_spec: str | None, after: tuple[int, str] | None
) -> tuple[str, list[object]]:
    """``FROM ... WHERE ...`` for a selective harvest, naming the index that orders it."""
    clauses: list[str] = []
    params: list[object] = []
    index = "files_by_date"
    if set_spec is not None:
        major, mime = mime_for_set_spec(set_spec)
        index = "files_by_major" if mime is None else "files_by_mime"
        clauses.append("mime_major = ?" if mime is None else "mime = ?")
        params.append(major if mime is None else mime)
    if start is not None:
        clauses.append("datestamp >= ?")
        params.append(start)
    if until is not None:
        clauses.append("datestamp <= ?")
        params.append(until)
    if after is not None:
        clauses.append("(datestamp, identifier) > (?, ?)")
        params.extend(after)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return f"FROM files INDEXED BY {index}{where}", params


def _in_set(mime: str, set_spec: str | None) -> bool:
    if set_spec is None:
        return True
    major, full = mime_for_set_spec(set_spec)
    return mime == full if full is not None else mime.partition("/")[0] == major


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


def _await_writer(conn: sqlite3.Connection) -> None:
    """Take and release the write lock: a write transaction begun before has committed."""
    conn.execute("PRAGMA query_only = OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("COMMIT")
    finally:
        conn.execute("PRAGMA query_only = ON")


def _record(row: Any) -> FileRecord:
    """A row in ``_RECORD_COLUMNS`` order as a record (SQLite has no booleans)."""
    return FileRecord(row[0], row[1], row[2], bool(row[3]), *row[4:])


class Snapshot:
    """One consistent, read-only view of the index: everything committed when it opened."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def generation(self) -> int:
        """How many refreshes have changed the index so far: equal numbers, equal lists."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return 0 if row is None else int(row[0])

    def headers(
        self,
        *,
        start: int | None = None,
        until: int | None = None,
        set_spec: str | None = None,
        after: tuple[int, str] | None = None,
        limit: int,
    ) -> list[Header]:
        """(identifier, datestamp, deleted, mime) in (datestamp, identifier) order."""
        source, params = _filters(start, until, set_spec, after)
        sql = f"SELECT identifier, datestamp, deleted, mime {source} "
        return self._conn.execute(
            sql + "ORDER BY datestamp, identifier LIMIT ?", (*params, limit)
        ).fetchall()

    def records(
        self,
        *,
        start: int | None = None,
        until: int | None = None,
        set_spec: str | None = None,
        after: tuple[int, str] | None = None,
        limit: int,
    ) -> list[FileRecord]:
        """Like :meth:`headers`, with everything the index knows of each item."""
        source, params = _filters(start, until, set_spec, after)
        sql = f"SELECT {_RECORD_COLUMNS} {source} ORDER BY datestamp, identifier LIMIT ?"
        return [_record(row) for row in self._conn.execute(sql, (*params, limit))]

    def count(
        self, *, start: int | None = None, until: int | None = None, set_spec: str | None = None
    ) -> int:
        """How many items (deleted ones included) a selective harvest lists.

        A list with no ``from`` and an ``until`` at or after the newest datestamp (every
        harvest's first list) is answered from counts kept per MIME type at each refresh,
        instead of counting the whole index.
        """
        if start is None:
            known = self._stored_count(until, set_spec)
            if known is not None:
                return known
        source, params = _filters(start, until, set_spec, None)
        (total,) = self._conn.execute(f"SELECT count(*) {source}", params).fetchone()
        return int(total)

    def _stored_count(self, until: int | None, set_spec: str | None) -> int | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'mime_counts'").fetchone()
        if row is None:
            return None
        (newest,) = self._conn.execute("SELECT max(datestamp) FROM files").fetchone()
        if until is not None and newest is not None and until < newest:
            return None
        counts: dict[str, int] = json.loads(row[0])
        return sum(n for mime, n in counts.items() if _in_set(mime, set_spec))

    def get(self, identifier: str) -> FileRecord | None:
        return self._one("identifier", identifier)

    def get_by_relpath(self, relpath: bytes) -> FileRecord | None:
        return self._one("relpath", relpath)

    def _one(self, column: str, value: object) -> FileRecord | None:
        sql = f"SELECT {_RECORD_COLUMNS} FROM files WHERE {column} = ?"
        row = self._conn.execute(sql, (value,)).fetchone()
        return None if row is None else _record(row)

    def earliest_datestamp(self) -> int | None:
        """The smallest datestamp of any row, deleted ones included; None when empty."""
        (earliest,) = self._conn.execute("SELECT min(datestamp) FROM files").fetchone()
        return None if earliest is None else int(earliest)

    def set_specs(self) -> list[str]:
        """Every set that has an item: each MIME major type and each full type."""
        specs: set[str] = set()
        for (mime,) in self._conn.execute(
            "SELECT DISTINCT mime FROM files INDEXED BY files_by_mime"
        ):
            specs.update(set_specs_for(mime))
        return sorted(specs)


class FileIndex:
    """The SQLite index of a document root's files (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        docroot: str | os.PathLike[str],
        base_url: str,
        *,
        exclude: Sequence[str] = DEFAULT_EXCLUDES,
        allow_outside: Sequence[str | os.PathLike[str]] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.docroot = Path(docroot)
        self.base_url = base_url.rstrip("/")
        self.exclude = tuple(exclude)
        self.allow_outside = tuple(allow_outside)
        self.outside: list[OutsideLink] = []  # the last refresh's unfollowed links out of the root
        self._clock = clock
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._secret: bytes | None = None

    # -- life cycle -------------------------------------------------------------------------

    def open(self) -> FileIndex:
        """Create the schema (WAL mode, a token secret) if needed; check its version."""
        conn = self._connect()
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            self._check_version(conn)
            conn.executescript(_SCHEMA)
            self._adopt_base_url(conn)
            self._secret = bytes(self._meta(conn, "secret"))
        finally:
            conn.close()
        return self

    def close(self) -> None:
        """Close every reader connection; the index can be opened again."""
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()
        self._local = threading.local()
        self._secret = None

    def __enter__(self) -> FileIndex:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def secret(self) -> bytes:
        """32 random bytes made once per index (for signing resumption tokens)."""
        if self._secret is None:
            raise RuntimeError("the index is not open")
        return self._secret

    # -- reading ----------------------------------------------------------------------------

    @contextmanager
    def snapshot(self, *, settled: bool = False) -> Iterator[Snapshot]:
        """A read transaction on this thread's connection; nested calls share it.

        ``settled`` first waits for a write transaction in progress to commit. A refresh
        stamps its rows before it commits, possibly in an earlier second: a list bounded at
        the current second must see them, or a harvest ``from`` that second would miss them.
        Any write that takes the lock afterwards is stamped with a later clock reading.
        """
        conn = self._reader()
        local = self._local
        if local.depth == 0:
            if settled:
                _await_writer(conn)
            conn.execute("BEGIN")
            conn.execute("SELECT 1 FROM meta LIMIT 1")  # the WAL snapshot starts at a read
        local.depth += 1
        try:
            yield Snapshot(conn)
        finally:
            local.depth -= 1
            if local.depth == 0:
                conn.execute("COMMIT")

    def _reader(self) -> sqlite3.Connection:
        if self._secret is None:
            raise RuntimeError("the index is not open")
        local = self._local
        # A forked worker must not use its parent's connection.
        if getattr(local, "pid", None) != os.getpid():
            local.conn = self._connect()
            local.conn.execute("PRAGMA query_only = ON")
            local.pid, local.depth = os.getpid(), 0
            with self._readers_lock:
                self._readers.append(local.conn)
        conn: sqlite3.Connection = local.conn
        return conn

    # -- refreshing -------------------------------------------------------------------------

    def refresh(self, blocking: bool = True) -> RefreshStats | None:
        """Bring the index up to date with the disk; None if another refresh holds the lock."""
        if self._secret is None:
            raise RuntimeError("the index is not open")
        with self._refresh_lock(blocking) as acquired:
            if not acquired:
                log.info("another refresh of %s is running", self.path)
                return None
            started = time.monotonic()
            conn = self._connect()
            try:
                racy_ns = time.time_ns() - RACY_WINDOW_NS
                changes = find_changes(
                    self._known(conn), self._scan(), racy_ns=racy_ns, base_url=self.base_url
                )
                if changes:
                    self._write(conn, changes)
            finally:
                conn.close()
        stats = changes.stats(time.monotonic() - started)
        log.info(
            "refreshed %s: %d scanned, %d hashed, %d added, %d changed, %d deleted, "
            "%d unchanged in %.3f s",
            self.docroot,
            stats.scanned,
            stats.hashed,
            stats.added,
            stats.changed,
            stats.deleted,
            stats.unchanged,
            stats.seconds,
        )
        return stats

    @contextmanager
    def _refresh_lock(self, blocking: bool) -> Iterator[bool]:
        """One refresh at a time across processes: flock on ``<index>.lock``."""
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # releases the lock

    def _scan(self) -> Iterator[Found]:
        index = os.fsencode(os.path.realpath(self.path))
        skip = frozenset(index + suffix for suffix in INDEX_SUFFIXES)
        scanner = Scanner(os.fsencode(self.docroot), self.exclude, skip, self.allow_outside)
        self.outside = scanner.outside
        return scanner.walk()

    @staticmethod
    def _known(conn: sqlite3.Connection) -> Iterator[Known]:
        """Every row, in relative-path order (the UNIQUE index's: no sort, nothing held)."""
        rows = conn.execute(
            "SELECT relpath, size, mtime_ns, ctime_ns, inode, sha256, deleted FROM files"
            " ORDER BY relpath"
        )
        return map(Known._make, rows)

    def _write(self, conn: sqlite3.Connection, plan: Changes) -> None:
        """All changes in one short transaction, stamped with the second it took the lock in
        (readers that need every row of that second wait for it: ``snapshot(settled=True)``)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            now = self._now(conn)
            conn.executemany(_UPSERT, [(*row, now) for row in sorted(plan.upserts)])
            conn.executemany(
                "UPDATE files SET ctime_ns = ?, inode = ? WHERE relpath = ?", plan.touches
            )
            conn.executemany(
                "UPDATE files SET deleted = 1, datestamp = ? WHERE relpath = ?",
                [(now, rel) for rel in plan.deletions],
            )
            if plan.upserts or plan.deletions:
                _store_counts(conn)
                _bump_generation(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _now(self, conn: sqlite3.Connection) -> int:
        """The clock's second, but never before a datestamp already given out."""
        (latest,) = conn.execute("SELECT max(datestamp) FROM files").fetchone()
        return max(int(self._clock()), latest or 0)

    # -- helpers ----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # Connections are used by one thread at a time; close() may run in another thread.
        conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    @staticmethod
    def _meta(conn: sqlite3.Connection, key: str) -> Any:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _check_version(self, conn: sqlite3.Connection) -> None:
        try:
            version = self._meta(conn, "schema_version")
        except sqlite3.OperationalError:  # a new file: no meta table yet
            return
        if version not in (None, SCHEMA_VERSION):
            raise IndexSchemaError(f"{self.path}: schema {version!r}, need {SCHEMA_VERSION}")

    def _adopt_base_url(self, conn: sqlite3.Connection) -> None:
        """Identifiers embed the base URL: when it changes, retire the old ones (:mod:`rebase`)."""
        if self._meta(conn, "base_url") == self.base_url:
            return
        with self._refresh_lock(blocking=True):
            conn.execute("BEGIN IMMEDIATE")
            try:
                if self._meta(conn, "base_url") != self.base_url:
                    self._reidentify(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _reidentify(self, conn: sqlite3.Connection) -> None:
        if rebase(conn, self.base_url, self._now(conn)):
            _store_counts(conn)
            _bump_generation(conn)
