"""Leases: each host of a job to one worker at a time, each endpoint's lists to one lister.

A worker claims rows of the ``leases`` table (``schema.py``) with ``SELECT ... FOR UPDATE SKIP
LOCKED``, so claims made at once by many workers never wait on each other and never take the
same row. A claim is free when its row has no holder or its expiry (on the database's clock)
has passed, as a SIGKILLed worker's rows do ``seconds`` after its last renewal; every claim
adds one to the row's ``token``. An acknowledgement (:meth:`PostgresLeases.acknowledge`) runs
inside the transaction that records what was archived, and renews the lease only while the
token is still the one claimed: a worker whose lease expired and was taken over gets
:class:`~harvester.exceptions.LeaseLost` and its transaction rolls back, so at most what it
had in flight is done twice (Kleppmann's fencing token).

Workers say they are alive in ``workers`` (:meth:`PostgresLeases.heartbeat`); a worker takes
at most its share of the hosts with work, ``ceil(hosts / live workers)``, so a job's hosts
spread over its workers (Heritrix's, Nutch's and StormCrawler's one host per worker).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from harvester.exceptions import LeaseLost
from harvester.storage.protocol import Lease

NOW = "extract(epoch from clock_timestamp())"
HOST = "host:"
LIST = "list:"
# Where each kind of job keeps its outstanding work: a crawl's queued URLs, or the resources
# a fetch still owes; both indexed on (site, status, host) (``schema.py``).
_OUTSTANDING = {"crawl": ("frontier", "queued"), "fetch": ("resources", "pending")}


def work_query(kind: str, site: str, hosts: list[str] | None = None) -> tuple[str, tuple[Any, ...]]:
    """The query of the hosts (of ``hosts``, if given) with outstanding work of a ``kind``
    job, and its parameters. A loose index scan: one index probe per host, however many URLs
    each has queued (a ``DISTINCT`` reads every one of them).
    """
    table, status = _OUTSTANDING[kind]
    where = f"site=? AND status='{status}'" + ("" if hosts is None else " AND host = ANY(?)")
    params = (site,) if hosts is None else (site, hosts)
    sql = (
        f"WITH RECURSIVE w(host) AS ((SELECT host FROM {table} WHERE {where}"
        " ORDER BY host LIMIT 1) UNION ALL SELECT (SELECT host FROM"
        f" {table} WHERE {where} AND host > w.host ORDER BY host LIMIT 1) FROM w"
        " WHERE w.host IS NOT NULL) SELECT host FROM w WHERE host IS NOT NULL"
    )
    return sql, params * 2


class PostgresLeases:
    """The lease operations, on a state's connection (``PostgresState.leases``)."""

    def __init__(self, state: Any, seconds: float) -> None:
        self.state = state
        self.seconds = seconds

    @property
    def db(self) -> Any:
        return self.state.db

    def now(self) -> float:
        return float(self.db.execute(f"SELECT {NOW}").fetchone()[0])

    def heartbeat(self, site: str, worker: str) -> int:
        """Say ``worker`` is alive; how many workers of the job are (itself included)."""
        self.db.execute(
            f"INSERT INTO workers (site, worker, seen, started) VALUES (?,?,{NOW},{NOW})"
            f" ON CONFLICT (site, worker) DO UPDATE SET seen={NOW}",
            (site, worker),
        )
        row = self.db.execute(
            f"SELECT COUNT(*) FROM workers WHERE site=? AND seen > {NOW} - ?",
            (site, self.seconds),
        ).fetchone()
        return max(int(row[0]), 1)

    def leave(self, site: str, worker: str) -> None:
        """``worker`` ends: its leases are free at once, and it no longer counts as alive."""
        with self.state.transaction():
            self.db.execute(
                "UPDATE leases SET worker=NULL, expires=0 WHERE site=? AND worker=?",
                (site, worker),
            )
            self.db.execute("DELETE FROM workers WHERE site=? AND worker=?", (site, worker))

    def hosts_with_work(self, site: str, kind: str) -> int:
        sql, params = work_query(kind, site)
        return int(self.db.execute(f"SELECT COUNT(*) FROM ({sql}) h", params).fetchone()[0])

    def with_work(self, site: str, kind: str, hosts: Collection[str]) -> set[str]:
        """Those of ``hosts`` that have outstanding work in the state (queued by any worker)."""
        if not hosts:
            return set()
        rows = self.db.execute(*work_query(kind, site, list(hosts))).fetchall()
        return {host for (host,) in rows}

    def share(self, site: str, kind: str, workers: int) -> int:
        """How many hosts one of ``workers`` live workers may hold."""
        return max(1, math.ceil(self.hosts_with_work(site, kind) / max(workers, 1)))

    def claim_hosts(self, site: str, worker: str, kind: str, limit: int) -> list[Lease]:
        """Up to ``limit`` free hosts with work, now leased to ``worker``: first those whose
        holder died (expired, not released: its work under way), then the least claimed."""
        if limit <= 0:
            return []
        work, params = work_query(kind, site)
        with self.state.transaction():
            self.db.execute(
                f"INSERT INTO leases (site, name) SELECT ?, '{HOST}' || host"
                f" FROM ({work}) h ON CONFLICT (site, name) DO NOTHING",
                (site, *params),
            )
            rows = self.db.execute(
                f"SELECT name FROM leases WHERE site=? AND name IN"
                f" (SELECT '{HOST}' || host FROM ({work}) h)"
                f" AND (worker IS NULL OR expires < {NOW})"
                " ORDER BY worker IS NULL, token, name LIMIT ? FOR UPDATE SKIP LOCKED",
                (site, *params, limit),
            ).fetchall()
            return [self._take(site, name, worker) for (name,) in rows]

    def claim(self, site: str, name: str, worker: str) -> Lease | None:
        """The lease ``name`` for ``worker``, if it is free (or already ``worker``'s)."""
        with self.state.transaction():
            self.db.execute(
                "INSERT INTO leases (site, name) VALUES (?,?) ON CONFLICT (site, name) DO NOTHING",
                (site, name),
            )
            row = self.db.execute(
                "SELECT name FROM leases WHERE site=? AND name=?"
                f" AND (worker IS NULL OR worker=? OR expires < {NOW}) FOR UPDATE SKIP LOCKED",
                (site, name, worker),
            ).fetchone()
            return None if row is None else self._take(site, name, worker)

    def _take(self, site: str, name: str, worker: str) -> Lease:
        row = self.db.execute(
            f"UPDATE leases SET worker=?, token=token+1, expires={NOW} + ?"
            " WHERE site=? AND name=? RETURNING token, next_at",
            (worker, self.seconds, site, name),
        ).fetchone()
        return Lease(name, worker, int(row[0]), float(row[1]))

    def renew(self, site: str, leases: Collection[Lease]) -> list[Lease]:
        """Extend ``leases``; those lost meanwhile (expired and taken over) are returned."""
        lost = []
        for lease in leases:
            cur = self.db.execute(
                f"UPDATE leases SET expires={NOW} + ? WHERE site=? AND name=? AND token=?",
                (self.seconds, site, lease.name, lease.token),
            )
            if cur.rowcount == 0:
                lost.append(lease)
        return lost

    def acknowledge(self, site: str, lease: Lease, url: str) -> None:
        """Inside the transaction that records ``url``'s capture: fail with LeaseLost unless
        ``lease`` is still held with its token, renew it, and note which worker did it."""
        if self.renew(site, [lease]):
            raise LeaseLost(f"the lease on {lease.name} was taken over (token {lease.token})")
        self.db.execute("UPDATE resources SET worker=? WHERE url=?", (lease.worker, url))

    def release(self, site: str, lease: Lease, next_at: float = 0.0) -> None:
        """Free ``lease``, handing over when the host may be asked next (database clock)."""
        self.db.execute(
            "UPDATE leases SET worker=NULL, expires=0, next_at=? WHERE site=? AND name=?"
            " AND token=?",
            (next_at, site, lease.name, lease.token),
        )

    def held(self, site: str, prefix: str = HOST) -> dict[str, str]:
        """The live leases named ``prefix...``, and their holders."""
        rows = self.db.execute(
            f"SELECT name, worker FROM leases WHERE site=? AND worker IS NOT NULL"
            f" AND expires >= {NOW} AND name LIKE ?",
            (site, prefix + "%"),
        ).fetchall()
        return {name: worker for name, worker in rows}

    def marked(self, site: str, names: Collection[str]) -> set[str]:
        """Those of ``names`` marked in the job (:meth:`mark`)."""
        rows = self.db.execute(
            "SELECT name FROM leases WHERE site=? AND name = ANY(?)", (site, list(names))
        ).fetchall()
        return {name for (name,) in rows}

    def mark(self, site: str, name: str) -> None:
        """Note ``name`` once in the job (a row never held): a seed host's sitemaps read
        (``sitemaps:<host>``), the job's site found to have no provider (``mode:crawl``)."""
        with self.state.transaction():
            self.db.execute(
                "INSERT INTO leases (site, name) VALUES (?,?) ON CONFLICT (site, name) DO NOTHING",
                (site, name),
            )
