"""The SQLite state's crawl frontier: every URL the crawl ever queued, with its depth,
policy, scores and discovery order, so a crawl killed at any moment resumes with nothing
lost. A queued URL is also a pending resource, written in the same transaction."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from harvester.storage.protocol import QueuedRow
from harvester.storage.sqlite.connection import SQLiteConnection, marks

_COLUMNS = "url, host, depth, policy, distance, scores, seq, via"


class SQLiteFrontier(SQLiteConnection):
    def enqueue(self, site: str, rows: Iterable[QueuedRow]) -> list[QueuedRow]:
        """Queue URLs not queued before (also as pending resources); return those added."""
        added = []
        now = time.time()
        with self.atomic():
            for row in rows:
                cur = self.db.execute(
                    "INSERT INTO frontier (url, site, host, depth, policy, distance, scores,"
                    " seq, status, via) VALUES (?,?,?,?,?,?,?,?,'queued',?)"
                    " ON CONFLICT (url) DO NOTHING",
                    (
                        row.url,
                        site,
                        row.host,
                        row.depth,
                        row.policy,
                        row.distance,
                        json.dumps(row.scores),
                        row.seq,
                        row.via,
                    ),
                )
                if cur.rowcount:
                    added.append(row)
                    self.db.execute(
                        "INSERT INTO resources (url, site, status, updated) VALUES"
                        " (?,?,'pending',?) ON CONFLICT (url) DO UPDATE SET status='pending'",
                        (row.url, site, now),
                    )
        return added

    def queued(self, site: str, hosts: Collection[str] | None = None) -> Iterator[QueuedRow]:
        """The queued URLs in discovery order (a crawl resumes from these); with ``hosts``,
        of those hosts only."""
        only = "" if hosts is None else f" AND host IN ({marks(len(hosts))})"
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM frontier WHERE site=? AND status='queued'{only} ORDER BY seq",
            (site, *(hosts or ())),
        ).fetchall()
        for row in rows:
            yield queued_row(row)

    def dequeue(self, url: str) -> None:
        self.db.execute("UPDATE frontier SET status='done' WHERE url=?", (url,))

    def rescore(self, changes: Iterable[tuple[str, dict[str, float], str]]) -> None:
        """Store queued URLs' new (url, scores, policy); a URL no longer queued is left."""
        self.db.executemany(
            "UPDATE frontier SET scores=?, policy=? WHERE url=? AND status='queued'",
            [(json.dumps(scores), policy, url) for url, scores, policy in changes],
        )

    def requeue_done(self, site: str) -> int:
        """Start a new crawl cycle: every fetched URL is queued again, for a revisit."""
        with self.transaction():
            cur = self.db.execute(
                "UPDATE frontier SET status='queued' WHERE site=? AND status='done'", (site,)
            )
            self.db.execute(
                "UPDATE resources SET status='pending' WHERE site=? AND status IN"
                " ('archived','failed')",
                (site,),
            )
        return cur.rowcount

    def max_seq(self, site: str) -> int:
        row = self.db.execute("SELECT MAX(seq) FROM frontier WHERE site=?", (site,)).fetchone()
        return int(row[0] or 0)


def queued_row(row: tuple[Any, ...]) -> QueuedRow:
    url, host, depth, policy, distance, scores, seq, via = row
    return QueuedRow(url, host, depth, policy, distance, json.loads(scores), seq, via)
