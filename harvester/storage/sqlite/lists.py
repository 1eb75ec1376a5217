"""The state's lists: per (endpoint, set, metadataPrefix), an incremental bound and a position.

Each list a run makes (one per ``--set``, or one of the whole repository) has its own row, so
one list's ``from`` is never taken from another's responseDate: a file of the first set that
changes while the second set is being listed is listed again by the first set's next list.

A run resumes an active list at its token, and does not list a ``listed`` one again. At the
end of a run whose fetches all ran, every listed list's bound (``harvested_until``) moves to
its own responseDate, held back to the oldest resource still waiting to be archived, and the
row becomes idle again (the states are described in ``harvester/storage/protocol.py``).

A state of schema 1 kept one bound per site; it becomes a row with set and prefix ``*``, the
bound of every list of that endpoint that has none of its own yet (``migration.py``).
"""

from __future__ import annotations

import sqlite3

from harvester.storage.protocol import ListKey, ListPosition
from harvester.storage.sqlite.schema import ANY
from harvester.storage.sqlite.transaction import Transaction


class SQLiteLists:
    """The ``lists`` table, on the state's connection (``SQLiteState.lists``)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def position(self, key: ListKey) -> ListPosition:
        row = self.db.execute(
            "SELECT harvested_until, list_from, list_token, list_response_date, list_state"
            " FROM lists WHERE endpoint=? AND set_spec=? AND prefix=?",
            key.columns,
        ).fetchone()
        until, from_, token, date, state = row or (None, None, None, None, "idle")
        if until is None:
            until = self._carried_over(key.endpoint)
        return ListPosition(until, from_, token, date, state)

    def known(self) -> list[ListKey]:
        """Every list the state has a row for, schema 1's carried-over bound included."""
        rows = self.db.execute("SELECT endpoint, set_spec, prefix FROM lists ORDER BY 1, 2, 3")
        return [ListKey(endpoint, spec or None, prefix) for endpoint, spec, prefix in rows]

    def _carried_over(self, endpoint: str) -> str | None:
        row = self.db.execute(
            "SELECT harvested_until FROM lists WHERE endpoint=? AND set_spec=? AND prefix=?",
            (endpoint, ANY, ANY),
        ).fetchone()
        return row[0] if row else None

    def start(self, key: ListKey, from_: str | None) -> None:
        self.db.execute(
            "INSERT INTO lists (endpoint, set_spec, prefix, list_from, list_state)"
            " VALUES (?,?,?,?,'active') ON CONFLICT (endpoint, set_spec, prefix) DO UPDATE"
            " SET list_from=excluded.list_from, list_token=NULL, list_response_date=NULL,"
            " list_state='active'",
            (*key.columns, from_),
        )

    def page(self, key: ListKey, token: str | None, response_date: str) -> None:
        """The position after a page; the list's responseDate is its first page's."""
        self.db.execute(
            "UPDATE lists SET list_token=?, list_response_date=COALESCE(list_response_date, ?)"
            " WHERE endpoint=? AND set_spec=? AND prefix=?",
            (token, response_date, *key.columns),
        )

    def finish(self, key: ListKey) -> None:
        self.db.execute(
            "UPDATE lists SET list_token=NULL, list_state='listed'"
            " WHERE endpoint=? AND set_spec=? AND prefix=?",
            key.columns,
        )

    def forget(self, key: ListKey) -> None:
        """Drop the list under way as if it had never started; its bound stays."""
        self.db.execute(
            "UPDATE lists SET list_from=NULL, list_token=NULL, list_response_date=NULL,"
            " list_state='idle' WHERE endpoint=? AND set_spec=? AND prefix=?",
            key.columns,
        )

    def advance(self, keys: list[ListKey], oldest_unarchived: str | None) -> None:
        """Each listed list's next ``from``: its own responseDate, held back to the oldest
        resource still waiting; a list that delivered nothing keeps its bound."""
        oldest = oldest_unarchived
        with Transaction(self.db):
            for key in keys:
                self.db.execute(
                    "UPDATE lists SET harvested_until=CASE WHEN list_response_date IS NULL"
                    " THEN harvested_until WHEN ? IS NULL THEN list_response_date"
                    " WHEN ? < list_response_date THEN ? ELSE list_response_date END,"
                    " list_from=NULL, list_response_date=NULL, list_state='idle'"
                    " WHERE endpoint=? AND set_spec=? AND prefix=? AND list_state='listed'",
                    (oldest, oldest, oldest, *key.columns),
                )

    def started(self, keys: list[ListKey]) -> str | None:
        """The earliest responseDate of these lists under way or listed: when listing began."""
        dates = [d for k in keys if (d := self.position(k).response_date)]
        return min(dates, default=None)
