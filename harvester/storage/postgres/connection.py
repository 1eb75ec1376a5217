"""The PostgreSQL state's connection: opening (the schema, made once however many workers
start together), transactions and batches, on the adapter of ``database.py``.

A transaction is ``BEGIN`` ... ``COMMIT`` (``ROLLBACK`` on an exception), at PostgreSQL's
default READ COMMITTED isolation: every statement the state makes is a keyed insert or update,
and the claims that must not race take row locks (``leases.py``). A batch is one transaction
committed at its end; unlike SQLite, a failed *statement* inside it aborts the whole batch
(PostgreSQL discards a transaction after an error), while an exception raised between
statements keeps the steps done before it, as the protocol promises.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

import psycopg

from harvester.exceptions import StateError
from harvester.storage.postgres.database import PostgresDatabase
from harvester.storage.postgres.schema import SCHEMA, SCHEMA_VERSION
from harvester.storage.sqlite.transaction import Transaction

_SCHEMA_LOCK = 0x68617276  # the advisory lock that serialises creating the tables


class PostgresConnection:
    """One job's database: opened with :meth:`open` (or ``with``), closed with :meth:`close`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._pg: PostgresDatabase | None = None

    def open(self) -> None:
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=30)
        except psycopg.Error as exc:
            raise StateError(f"cannot open the state database {_safe(self.url)}: {exc}") from exc
        self._pg = PostgresDatabase(conn)
        with self.transaction():
            self.db.execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
            if self._version() is None:  # new: its tables (DDL would lock out running workers)
                conn.execute(SCHEMA)
            self._check_version()

    def close(self) -> None:
        if self._pg is not None:
            self._pg.conn.close()
            self._pg = None

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def db(self) -> Any:  # a PostgresDatabase, which the SQLite modules call as a connection
        if self._pg is None:
            raise StateError("the state database is not open")
        return self._pg

    def _version(self) -> str | None:
        """The database's schema version; None before its tables are made."""
        if self.db.execute("SELECT to_regclass('meta')").fetchone()[0] is None:
            return None
        row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        return None if row is None else str(row[0])

    def _check_version(self) -> None:
        version = self._version()
        if version is None:
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(version) != SCHEMA_VERSION:
            raise StateError(f"{_safe(self.url)} has schema {version}, not {SCHEMA_VERSION}")

    def transaction(self) -> Transaction:
        """One atomic step: all of the block, or none of it (SQLite's, on the adapter)."""
        return Transaction(self.db)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many steps, one commit (see the module docstring)."""
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")


def _safe(url: str) -> str:
    """``url`` without a password, for messages.

    >>> _safe("postgresql://arch:secret@db.example/jobs")
    'postgresql://arch:***@db.example/jobs'
    """
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    user = head.split("//", 1)[-1].split(":", 1)[0]
    return f"{head.split('//', 1)[0]}//{user}:***@{tail}"
