"""The SQLite state's crawl frontier: every URL the crawl ever queued, with its depth,
policy, scores and discovery order, so a crawl killed at any moment resumes with nothing
lost. A queued URL is also a pending resource, written in the same transaction.

A URL's depth is the shortest distance from a seed known so far (:meth:`lower_depths`): a
fetched URL that a shorter path reaches is queued again once the crawl is depth-bound (some
link was refused for depth: ``meta`` key ``depth-bound <site>``), so that its links are
followed from the new depth; until then it is only marked ``lowered``."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from harvester.storage.protocol import QueuedRow
from harvester.storage.sqlite.connection import SQLiteConnection, marks

_COLUMNS = "url, host, depth, policy, distance, scores, seq, via"
_CHUNK = 500  # URLs per IN (...) list


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
                "UPDATE frontier SET status='queued' WHERE site=? AND status IN ('done','lowered')",
                (site,),
            )
            self.db.execute(
                "UPDATE resources SET status='pending' WHERE site=? AND status IN"
                " ('archived','failed')",
                (site,),
            )
        return cur.rowcount

    def depth_of(self, url: str) -> int | None:
        row = self.db.execute("SELECT depth FROM frontier WHERE url=?", (url,)).fetchone()
        return None if row is None else int(row[0])

    def lower_depths(
        self, site: str, urls: Collection[str], depth: int
    ) -> tuple[list[str], list[QueuedRow]]:
        """Give those of ``urls`` deeper than ``depth`` that depth (one statement a chunk,
        which changes nothing in most); the fetched ones among them are queued again when the
        crawl is depth-bound, else marked ``lowered``. Returns (the queued URLs lowered, the
        rows queued again). Inside the caller's transaction."""
        again = "again" if self.depth_bound(site) else "lowered"
        lowered: list[str] = []
        back: list[str] = []
        todo = list(urls)
        for start in range(0, len(todo), _CHUNK):
            chunk = todo[start : start + _CHUNK]
            rows = self.db.execute(
                "UPDATE frontier SET depth=?, status=CASE WHEN status='queued' THEN 'queued'"
                f" ELSE ? END WHERE url IN ({marks(len(chunk))}) AND depth > ? RETURNING url,"
                " status",
                (depth, again, *chunk, depth),
            ).fetchall()
            lowered += [url for url, status in rows if status == "queued"]
            back += [url for url, status in rows if status == "again"]
        requeued: list[QueuedRow] = []
        for start in range(0, len(back), _CHUNK):
            chunk = back[start : start + _CHUNK]
            rows = self.db.execute(
                f"UPDATE frontier SET status='queued' WHERE url IN ({marks(len(chunk))})"
                f" RETURNING {_COLUMNS}",
                chunk,
            ).fetchall()
            requeued += [queued_row(row) for row in rows]
        self._pending([row.url for row in requeued])
        return lowered, requeued

    def depth_bound(self, site: str) -> bool:
        """Whether the crawl of ``site`` ever refused a link for its depth."""
        key = f"depth-bound {site}"
        return self.db.execute("SELECT 1 FROM meta WHERE key=?", (key,)).fetchone() is not None

    def mark_depth_bound(self, site: str) -> list[QueuedRow]:
        """A link was refused for depth: from now on a fetched URL a shorter path reaches is
        queued again, as are those marked ``lowered`` so far (returned)."""
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO NOTHING",
            (f"depth-bound {site}",),
        )
        rows = self.db.execute(
            f"UPDATE frontier SET status='queued' WHERE site=? AND status='lowered'"
            f" RETURNING {_COLUMNS}",
            (site,),
        ).fetchall()
        requeued = [queued_row(row) for row in rows]
        self._pending([row.url for row in requeued])
        return requeued

    def _pending(self, urls: list[str]) -> None:
        self.db.executemany(
            "UPDATE resources SET status='pending' WHERE url=?", [(url,) for url in urls]
        )

    def max_seq(self, site: str) -> int:
        row = self.db.execute("SELECT MAX(seq) FROM frontier WHERE site=?", (site,)).fetchone()
        return int(row[0] or 0)


def queued_row(row: tuple[Any, ...]) -> QueuedRow:
    url, host, depth, policy, distance, scores, seq, via = row
    return QueuedRow(url, host, depth, policy, distance, json.loads(scores), seq, via)
