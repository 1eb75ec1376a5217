"""The PostgreSQL state: one database per job, shared by every worker of the job, on one
machine or many (``postgresql://USER@HOST/DB``, as libpq reads it).

:class:`PostgresState` is the :class:`~harvester.storage.protocol.State` of ``postgresql://``
URLs. Its resources, frontier, sources and lists are the SQLite state's modules, whose SQL runs
unchanged on the adapter of ``database.py``; it overrides only what SQLite does its own way,
and adds the leases of a shared job (``leases.py``).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Iterator

from harvester.storage.postgres.connection import PostgresConnection
from harvester.storage.postgres.leases import PostgresLeases
from harvester.storage.protocol import LeaseStore, QueuedRow
from harvester.storage.sqlite.frontier import SQLiteFrontier, queued_row
from harvester.storage.sqlite.items import ItemState
from harvester.storage.sqlite.resources import SQLiteResources
from harvester.storage.sqlite.sources import SQLiteSources

SCHEME = "postgresql"
LEASE_SECONDS = 30.0


class PostgresState(PostgresConnection, SQLiteSources, SQLiteResources, SQLiteFrontier):
    """The whole state of a job, on one connection per worker."""

    def __init__(self, url: str, lease_seconds: float = LEASE_SECONDS) -> None:
        super().__init__(url)
        self.leases: LeaseStore | None = PostgresLeases(self, lease_seconds)

    @property
    def items(self) -> ItemState:
        return ItemState(self.db)

    def add_pending(self, site: str, urls: Iterable[str]) -> int:
        """Queue URLs that no list named (seeds of a crawl, re-fetches)."""
        now = time.time()
        added = 0
        with self.transaction():
            for url in urls:
                added += self.db.execute(
                    "INSERT INTO resources (url, site, status, updated) VALUES (?,?,'pending',?)"
                    " ON CONFLICT (url) DO NOTHING",
                    (url, site, now),
                ).rowcount
        return added

    def queued(self, site: str, hosts: Collection[str] | None = None) -> Iterator[QueuedRow]:
        """The queued URLs in discovery order; with ``hosts``, of those hosts only."""
        if hosts is None:
            yield from super().queued(site)
            return
        rows = self.db.execute(
            "SELECT url, host, depth, policy, distance, scores, seq, via FROM frontier"
            " WHERE site=? AND status='queued' AND host = ANY(?) ORDER BY seq",
            (site, list(hosts)),
        ).fetchall()
        for row in rows:
            yield queued_row(row)

    def requeue_done(self, site: str) -> int:
        """Start a new crawl cycle, unless one is under way: of workers starting together on
        a finished crawl, only the first starts it (the others find URLs queued)."""
        key = f"cycle:{site}"
        self.db.execute("SELECT pg_advisory_lock(hashtext(?))", (key,))
        try:
            if self.db.execute(
                "SELECT 1 FROM frontier WHERE site=? AND status='queued' LIMIT 1", (site,)
            ).fetchone():
                return 0
            return super().requeue_done(site)  # committed before the next worker looks
        finally:
            self.db.execute("SELECT pg_advisory_unlock(hashtext(?))", (key,))

    def captures_by_worker(self, site: str) -> dict[str, int]:
        """How many of the site's resources each worker archived last (``""``: before any
        worker, or by a harvest without leases)."""
        rows = self.db.execute(
            "SELECT COALESCE(worker, ''), COUNT(*) FROM resources WHERE site=?"
            " AND status IN ('archived','deleted') GROUP BY 1",
            (site,),
        )
        return {worker: int(n) for worker, n in rows}


def open_postgres(url: str) -> PostgresState:
    """The state of a ``postgresql://`` URL, not opened yet."""
    return PostgresState(url)
