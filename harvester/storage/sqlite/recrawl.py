"""The watch's state: per URL what its revisits saw and when it is due next (``harvester watch``).

One row per watched URL in the collection's state (``state.sqlite``, or a ``postgresql://``
state, where the table is made with PostgreSQL's column types), on the state's connection, as
``lists.py`` keeps the lists: the :class:`~harvester.recrawl.estimate.History` sums, the
last fetch, the next due time, the Nutch interval, the last ``Last-Modified`` and the bounds.
A row is written in the same transaction that marks the fetch archived, after its WARC group
is on disk, so a watch killed at any moment restarts with everything it had learned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harvester.recrawl.estimate import History
from harvester.recrawl.policy import Bounds, Entry

SCHEMA = """
CREATE TABLE IF NOT EXISTS revisits (
    url TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    visits INTEGER NOT NULL, changes INTEGER NOT NULL, observed REAL NOT NULL,
    lm_visits INTEGER NOT NULL, lm_changes INTEGER NOT NULL, lm_exposure REAL NOT NULL,
    last REAL,                       -- the last fetch (epoch s), NULL before the first
    due REAL NOT NULL,               -- the next one wanted
    interval REAL NOT NULL,          -- the nutch policy's interval
    modified REAL,                   -- the last Last-Modified (or change) seen
    min_interval REAL NOT NULL,
    max_interval REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS revisits_site ON revisits (site);
"""
_COLUMNS = (
    "url, visits, changes, observed, lm_visits, lm_changes, lm_exposure, last, due, interval,"
    " modified, min_interval, max_interval"
)
_UPDATE = ", ".join(f"{c}=excluded.{c}" for c in ["site", *_COLUMNS.split(", ")[1:]])


class RecrawlState:
    """The ``revisits`` table, on the state's connection (``State.db``); ``ddl`` the table's
    (``postgres_ddl(SCHEMA)`` on PostgreSQL)."""

    def __init__(self, db: Any, ddl: str = SCHEMA) -> None:
        self.db = db
        for statement in ddl.split(";"):
            if statement.strip():
                self.db.execute(statement)

    def entries(self, site: str) -> Iterator[Entry]:
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM revisits WHERE site=? ORDER BY url", (site,)
        ).fetchall()
        for row in rows:
            yield _entry(row)

    def add_resource(self, site: str, url: str, now: float) -> None:
        """A URL found on a revisit, pending its first fetch (inside the caller's
        transaction; ``SQLiteState.add_pending`` opens its own)."""
        self.db.execute(
            "INSERT INTO resources (url, site, status, updated) VALUES (?,?,'pending',?)"
            " ON CONFLICT(url) DO NOTHING",
            (url, site, now),
        )

    def save(self, site: str, entry: Entry) -> None:
        """Upsert ``entry``; inside the caller's transaction when one is open."""
        h = entry.history
        self.db.execute(
            f"INSERT INTO revisits (site, {_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            f" ON CONFLICT (url) DO UPDATE SET {_UPDATE}",
            (
                site,
                entry.url,
                h.visits,
                h.changes,
                h.observed,
                h.lm_visits,
                h.lm_changes,
                h.lm_exposure,
                entry.last,
                entry.due,
                entry.interval,
                entry.modified,
                entry.bounds.min_interval,
                entry.bounds.max_interval,
            ),
        )


def _entry(row: tuple[Any, ...]) -> Entry:
    url, visits, changes, observed, lmv, lmc, lme, last, due, interval, modified, low, high = row
    history = History(visits, changes, observed, lmv, lmc, lme)
    return Entry(url, Bounds(low, high), history, last, due, interval, modified)
