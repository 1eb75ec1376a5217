"""A PostgreSQL connection that runs the SQLite state's statements unchanged.

The SQLite modules write standard SQL with ``?`` placeholders (``sqlite/connection.py``): this
adapter turns each ``?`` into psycopg's ``%s`` and ``BEGIN IMMEDIATE`` into ``BEGIN``, and
binds values on the client (psycopg's ``ClientCursor``), so an untyped ``? IS NULL`` means what
it means in SQLite. The connection is in autocommit mode: a statement outside a transaction
commits on its own, as the protocol's single-statement calls promise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from harvester.exceptions import StateError

_BEGIN = "BEGIN IMMEDIATE"


def translate(sql: str) -> str:
    """``sql`` with psycopg's placeholders.

    >>> translate("SELECT a FROM t WHERE b=? AND c LIKE 'x%'")
    "SELECT a FROM t WHERE b=%s AND c LIKE 'x%%'"
    """
    if sql == _BEGIN:
        return "BEGIN"
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresDatabase:
    """The subset of ``sqlite3.Connection`` the state's modules call: ``in_transaction``,
    ``execute`` and ``executemany``, returning a cursor with ``fetchone``, ``fetchall``,
    ``rowcount`` and iteration."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    @property
    def in_transaction(self) -> bool:
        """As ``sqlite3.Connection.in_transaction``: a BEGIN is open."""
        return self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.ClientCursor[Any]:
        cur = psycopg.ClientCursor(self.conn)
        try:
            cur.execute(translate(sql), tuple(params))  # type: ignore[arg-type]
        except psycopg.OperationalError as exc:
            raise StateError(f"the state database failed: {_first_line(exc)}") from exc
        return cur

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.ClientCursor[Any]:
        cur = psycopg.ClientCursor(self.conn)
        cur.executemany(translate(sql), [tuple(r) for r in rows])  # type: ignore[arg-type]
        return cur


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
