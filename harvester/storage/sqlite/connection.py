"""The SQLite state's file and connection: opening (schema, version, upgrade), transactions
and batches, and the placeholders of its statements.

Statements use the ``qmark`` paramstyle (``?``) and positional parameters only; a list of
placeholders is made by :func:`marks`, so a port to another paramstyle changes these two.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coop_common.component import Component
from harvester.exceptions import StateError
from harvester.storage.sqlite.migration import migrate
from harvester.storage.sqlite.schema import SCHEMA, SCHEMA_VERSION
from harvester.storage.sqlite.transaction import Transaction

PARAM = "?"


def marks(count: int) -> str:
    """``count`` placeholders, comma-separated, for an ``IN (...)`` list.

    >>> marks(3)
    '?,?,?'
    """
    return ",".join(PARAM * count)


class SQLiteConnection(Component):
    """One state file: opened with :meth:`open` (or ``with``), closed with :meth:`close`.

    ``read_only`` (a collection on a read-only disk, or one its reader may not write) opens
    the file without writing a byte: ``mode=ro`` when a write-ahead log lies beside it (SQLite
    reads the log's commits too), else ``immutable=1``, since a WAL database cannot be opened
    ``mode=ro`` where its ``-shm`` file cannot be made, and without a log the file is whole.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self.read_only = read_only
        self._db: sqlite3.Connection | None = None

    def open(self) -> None:
        try:
            if self.read_only:
                self._db = _connect_read_only(self.path)
                self._check_version()
                return
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # durable against a killed process
            self._db.executescript(SCHEMA)
            self._check_version()
        except sqlite3.DatabaseError as exc:
            raise StateError(f"cannot open the state database {self.path}: {exc}") from exc

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StateError("the state database is not open")
        return self._db

    def _check_version(self) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if self.read_only and (row is None or int(row[0]) != SCHEMA_VERSION):
            found = "none" if row is None else row[0]
            raise StateError(
                f"{self.path} has schema {found}, not {SCHEMA_VERSION}, and is read-only: "
                "a harvest on a writable copy upgrades it"
            )
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) > SCHEMA_VERSION:
            raise StateError(f"{self.path} was written by a newer harvester (schema {row[0]})")
        elif int(row[0]) < SCHEMA_VERSION:
            migrate(self.db, int(row[0]), self.path)

    def transaction(self) -> Transaction:
        """One atomic step: ``with state.transaction(): ...``."""
        return Transaction(self.db)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The statements inside take effect whole or not at all: as a transaction of their
        own, or inside a transaction or batch already open, as a savepoint of it (so a batch,
        which keeps the steps done before a failure, never keeps half of this one)."""
        if not self.db.in_transaction:
            with Transaction(self.db):
                yield
            return
        self.db.execute("SAVEPOINT atomic")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK TO atomic")
            raise
        finally:
            self.db.execute("RELEASE atomic")

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many steps, one commit. Unlike a transaction, a failure inside keeps the steps
        done before it: each is whole on its own, and only the commits are shared."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            self.db.execute("COMMIT")


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened for reading only (see :class:`SQLiteConnection`)."""
    if not path.is_file():
        raise sqlite3.DatabaseError("no such file")
    log = path.with_name(path.name + "-wal")
    mode = "mode=ro" if log.exists() else "immutable=1"
    uri = f"{path.resolve().as_uri()}?{mode}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
