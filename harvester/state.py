"""The harvest state: one SQLite file per collection (``DIR/state.sqlite``).

It records, per source, the endpoint; per list (endpoint, set, metadataPrefix), its bound
and position (``liststate.py``, on the same connection); and per resource what was listed,
what was archived and where. With ``liststate.py``, ``stateschema.py`` (its tables) and
``statemigration.py`` it is the only code of the harvester that talks SQL. Every change is
one short transaction, so a harvester killed at any moment leaves the state as it was after
the last completed step: a resource is marked archived only after its WARC records were
written out (fsynced too with ``--durable``), and a list's next ``from`` never passes a
listed resource still pending.

Resource statuses::

    pending    listed (new or newer than what was archived), not yet archived
    archived   the listed version is in the WARCs (response, revisit or resource record)
    failed     the last attempt failed (404, 410, network); fetched again by a later run once
               it is :class:`Due` (a wait that doubles with each failed attempt), and never
               holding a list's ``from`` back: the state, not the list, keeps it
    abandoned  the listed version failed ``max_attempts`` times: not fetched again until the
               provider lists a newer version
    deleting   listed as deleted; the deletion note is not written yet
    deleted    the deletion note is in the WARCs; earlier captures are kept
    gone       a crawled URL now answers 404 or 410; earlier captures are kept

The crawl keeps its frontier here too: every URL it ever queued, with its depth, policy,
scores and discovery order, so a crawl killed at any moment resumes with nothing lost.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvester.exceptions import StateError
from harvester.liststate import ListKey, ListState
from harvester.statemigration import migrate
from harvester.stateschema import SCHEMA, SCHEMA_VERSION

ACTIVE = ("pending", "failed")  # to be fetched (a failed one once its retry time has come)
RETRYING = ("failed", "abandoned")


@dataclass(frozen=True)
class Source:
    site: str
    endpoint: str | None
    granularity: str | None
    deleted_record: str | None


@dataclass(frozen=True)
class Listed:
    """One header of a list, as the state needs it."""

    url: str
    identifier: str
    datestamp: str
    set_specs: tuple[str, ...]
    deleted: bool


@dataclass(frozen=True)
class Resource:
    url: str
    oai_identifier: str | None
    listed_datestamp: str | None
    archived_datestamp: str | None
    set_specs: tuple[str, ...]
    status: str
    etag: str | None
    last_modified: str | None
    payload_digest: str | None
    sha1: str | None
    sha256: str | None
    record_id: str | None
    warc_file: str | None
    warc_offset: int | None
    warc_length: int | None
    warc_date: str | None
    attempts: int


@dataclass(frozen=True)
class Capture:
    """Where and what was archived for one resource."""

    record_id: str
    warc_file: str
    warc_offset: int
    warc_length: int
    warc_date: str
    http_status: int | None
    etag: str | None
    last_modified: str | None
    payload_digest: str | None
    sha1: str | None
    sha256: str | None


@dataclass(frozen=True)
class Due:
    """Which failed resources may be fetched again at ``now``: those whose last failure was
    at least ``delay * 2 ** (attempts - 1)`` seconds before (pending ones always are)."""

    now: float
    delay: float


@dataclass(frozen=True)
class QueuedRow:
    """A frontier row: a URL the crawl has discovered and means to fetch."""

    url: str
    host: str
    depth: int
    policy: str
    distance: int
    scores: dict[str, float]
    seq: int
    via: str | None


class HarvestState:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    # -- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        try:
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

    def __enter__(self) -> HarvestState:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StateError("the state database is not open")
        return self._db

    def _check_version(self) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) > SCHEMA_VERSION:
            raise StateError(f"{self.path} was written by a newer harvester (schema {row[0]})")
        elif int(row[0]) < SCHEMA_VERSION:
            migrate(self.db, int(row[0]), self.path)

    @property
    def lists(self) -> ListState:
        """Each list's bound and position."""
        return ListState(self.db)

    # -- sources ---------------------------------------------------------------------

    def source(self, site: str) -> Source | None:
        row = self.db.execute(
            "SELECT site, endpoint, granularity, deleted_record FROM sources WHERE site=?",
            (site,),
        ).fetchone()
        return None if row is None else Source(*row)

    def record_endpoint(self, site: str, endpoint: str, granularity: str, deleted: str) -> None:
        self.db.execute(
            "INSERT INTO sources (site, endpoint, granularity, deleted_record) VALUES (?,?,?,?)"
            " ON CONFLICT(site) DO UPDATE SET endpoint=excluded.endpoint,"
            " granularity=excluded.granularity, deleted_record=excluded.deleted_record",
            (site, endpoint, granularity, deleted),
        )

    # -- listing ---------------------------------------------------------------------

    def record_page(
        self,
        site: str,
        headers: Iterable[Listed],
        key: ListKey,
        token: str | None,
        response_date: str,
    ) -> tuple[int, int]:
        """Store one page of list ``key`` and the position after it, in one transaction.

        Returns how many resources became pending and how many deletions were noted. The
        list's responseDate is that of its first page: the moment the list was bounded.
        """
        now = time.time()
        pending = deleting = 0
        with self._transaction():
            for item in headers:
                added = self._note_listed(site, item, now)
                pending += added == "pending"
                deleting += added == "deleting"
            self.lists.page(key, token, response_date)
        return pending, deleting

    def _note_listed(self, site: str, item: Listed, now: float) -> str | None:
        row = self.db.execute(
            "SELECT status, archived_datestamp, listed_datestamp FROM resources WHERE url=?",
            (item.url,),
        ).fetchone()
        specs = " ".join(item.set_specs)
        if item.deleted:
            status = None if row is not None and row[0] in ("deleted", "deleting") else "deleting"
        elif row is not None and row[0] == "archived" and (row[1] or "") >= item.datestamp:
            status = None  # this version is archived already
        elif row is not None and row[0] in RETRYING and (row[2] or "") >= item.datestamp:
            status = None  # this version failed before: its retries keep their schedule
        else:
            status = "pending"
        if status is None:
            return None
        self.db.execute(
            "INSERT INTO resources (url, site, oai_identifier, listed_datestamp, set_specs,"
            " status, updated) VALUES (?,?,?,?,?,?,?) ON CONFLICT(url) DO UPDATE SET"
            " oai_identifier=excluded.oai_identifier, listed_datestamp=excluded.listed_datestamp,"
            " set_specs=excluded.set_specs, status=excluded.status, updated=excluded.updated,"
            " attempts=0",
            (item.url, site, item.identifier, item.datestamp, specs, status, now),
        )
        return status

    def add_pending(self, site: str, urls: Iterable[str]) -> int:
        """Queue URLs that no list named (seeds of a crawl, re-fetches)."""
        now = time.time()
        with self._transaction():
            before = self.db.total_changes
            self.db.executemany(
                "INSERT INTO resources (url, site, status, updated) VALUES (?,?,'pending',?)"
                " ON CONFLICT(url) DO NOTHING",
                ((u, site, now) for u in urls),
            )
            return self.db.total_changes - before

    # -- resources -------------------------------------------------------------------

    def resources(
        self, site: str, statuses: tuple[str, ...], batch: int = 1000, due: Due | None = None
    ) -> Iterator[Resource]:
        """Resources in the given statuses, in URL order, read in batches (bounded memory);
        with ``due``, failed ones only once their wait is over."""
        marks = ",".join("?" * len(statuses))
        after = ""
        while True:
            rows = self.db.execute(
                f"SELECT {_RESOURCE_COLUMNS} FROM resources WHERE site=? AND status IN ({marks})"
                f" AND url > ? {_DUE if due is not None else ''} ORDER BY url LIMIT ?",
                (site, *statuses, after, *_due_args(due), batch),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _resource(row)
            after = rows[-1][0]

    def get(self, url: str) -> Resource | None:
        row = self.db.execute(
            f"SELECT {_RESOURCE_COLUMNS} FROM resources WHERE url=?", (url,)
        ).fetchone()
        return None if row is None else _resource(row)

    def mark_archived(self, url: str, capture: Capture, datestamp: str | None) -> None:
        """Called only after the capture's WARC records were flushed to disk."""
        self.db.execute(
            "UPDATE resources SET status='archived',"
            " archived_datestamp=COALESCE(?, listed_datestamp),"
            " record_id=?, warc_file=?, warc_offset=?, warc_length=?, warc_date=?, http_status=?,"
            " etag=?, last_modified=?, payload_digest=?, sha1=?, sha256=?, attempts=0,"
            " last_error=NULL, updated=? WHERE url=?",
            (
                datestamp,
                capture.record_id,
                capture.warc_file,
                capture.warc_offset,
                capture.warc_length,
                capture.warc_date,
                capture.http_status,
                capture.etag,
                capture.last_modified,
                capture.payload_digest,
                capture.sha1,
                capture.sha256,
                time.time(),
                url,
            ),
        )

    def mark_failed(self, url: str, error: str, http_status: int | None = None) -> None:
        """One more failed attempt, made now (the back-off counts from ``updated``)."""
        self.db.execute(
            "UPDATE resources SET status='failed', last_error=?, http_status=?,"
            " attempts=attempts+1, updated=? WHERE url=?",
            (error, http_status, time.time(), url),
        )

    def abandon(self, url: str, error: str, http_status: int | None = None) -> None:
        """The last attempt at the listed version failed: fetch it no more."""
        self.db.execute(
            "UPDATE resources SET status='abandoned', last_error=?, http_status=?,"
            " attempts=attempts+1, updated=? WHERE url=?",
            (error, http_status, time.time(), url),
        )

    def note(self, url: str, text: str) -> None:
        """Keep a remark on an archived resource (it stays archived)."""
        self.db.execute("UPDATE resources SET last_error=? WHERE url=?", (text, url))

    def mark_deleted(self, url: str) -> None:
        self.db.execute(
            "UPDATE resources SET status='deleted', updated=? WHERE url=?", (time.time(), url)
        )

    def known_record_ids(self, record_ids: Iterable[str]) -> set[str]:
        ids = list(record_ids)
        known: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT record_id FROM resources WHERE record_id IN ({marks})", chunk
            )
            known.update(r[0] for r in rows)
        return known

    def count(self, site: str, statuses: tuple[str, ...], due: Due | None = None) -> int:
        """How many of the site's resources are in ``statuses`` (and due, as in
        :meth:`resources`): read through the status index, so it costs what it counts."""
        marks = ",".join("?" * len(statuses))
        row = self.db.execute(
            f"SELECT COUNT(*) FROM resources WHERE status IN ({marks}) AND site=?"
            f" {_DUE if due is not None else ''}",
            (*statuses, site, *_due_args(due)),
        ).fetchone()
        return int(row[0])

    def counts(self, site: str) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT status, COUNT(*) FROM resources WHERE site=? GROUP BY status", (site,)
        )
        return {status: n for status, n in rows}

    # -- reading, for the commands that look at a collection (status, report, verify) --------

    def sites(self) -> list[str]:
        """Every site the collection holds resources of, or an endpoint for."""
        rows = self.db.execute("SELECT site FROM resources UNION SELECT site FROM sources")
        return sorted(r[0] for r in rows)

    def failures(self, site: str) -> Iterator[tuple[str, int | None, str | None]]:
        """(status, HTTP status, last error) of each failed, abandoned or gone resource."""
        yield from self.db.execute(
            "SELECT status, http_status, last_error FROM resources WHERE site=? AND status IN"
            " ('failed','abandoned','gone')",
            (site,),
        )

    def oldest_unarchived(self, site: str) -> str | None:
        """The earliest listed datestamp among resources still waiting to be archived
        (pending or deleting): ``from`` may not pass it. Failed ones do not count: the state
        keeps them and retries them on its own schedule."""
        row = self.db.execute(
            "SELECT MIN(listed_datestamp) FROM resources WHERE site=? AND status IN"
            " ('pending','deleting') AND listed_datestamp IS NOT NULL",
            (site,),
        ).fetchone()
        return row[0] if row else None

    def remember_capture(self, url: str, capture: Capture) -> None:
        """Keep what a capture was (for revisit detection) without calling it archived."""
        self.db.execute(
            "UPDATE resources SET record_id=?, warc_file=?, warc_offset=?, warc_length=?,"
            " warc_date=?, payload_digest=?, sha1=?, sha256=?, etag=?, last_modified=?"
            " WHERE url=?",
            (
                capture.record_id,
                capture.warc_file,
                capture.warc_offset,
                capture.warc_length,
                capture.warc_date,
                capture.payload_digest,
                capture.sha1,
                capture.sha256,
                capture.etag,
                capture.last_modified,
                url,
            ),
        )

    def mark_gone(self, url: str, http_status: int) -> None:
        """A crawled URL that now answers 404 or 410; its captures are kept."""
        self.db.execute(
            "UPDATE resources SET status='gone', http_status=?, attempts=attempts+1, updated=?"
            " WHERE url=?",
            (http_status, time.time(), url),
        )

    # -- the crawl frontier ------------------------------------------------------------

    def enqueue(self, site: str, rows: Iterable[QueuedRow]) -> list[QueuedRow]:
        """Queue URLs not queued before (also as pending resources); return those added."""
        added = []
        now = time.time()
        for row in rows:
            cur = self.db.execute(
                "INSERT OR IGNORE INTO frontier (url, site, host, depth, policy, distance, scores,"
                " seq, status, via) VALUES (?,?,?,?,?,?,?,?,'queued',?)",
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
                    "INSERT INTO resources (url, site, status, updated) VALUES (?,?,'pending',?)"
                    " ON CONFLICT(url) DO UPDATE SET status='pending'",
                    (row.url, site, now),
                )
        return added

    def queued(self, site: str) -> Iterator[QueuedRow]:
        """The queued URLs in discovery order (a crawl resumes from these)."""
        rows = self.db.execute(
            f"SELECT {_FRONTIER_COLUMNS} FROM frontier WHERE site=? AND status='queued'"
            " ORDER BY seq",
            (site,),
        ).fetchall()
        for row in rows:
            yield _queued_row(row)

    def queued_url(self, url: str) -> list[QueuedRow]:
        """The frontier row of ``url`` if it is still queued (empty list otherwise)."""
        rows = self.db.execute(
            f"SELECT {_FRONTIER_COLUMNS} FROM frontier WHERE url=? AND status='queued'", (url,)
        ).fetchall()
        return [_queued_row(row) for row in rows]

    def dequeue(self, url: str) -> None:
        self.db.execute("UPDATE frontier SET status='done' WHERE url=?", (url,))

    def rescore(self, url: str, scores: dict[str, float], policy: str) -> bool:
        """Store a queued URL's new scores and policy; False if it is not queued any more."""
        cur = self.db.execute(
            "UPDATE frontier SET scores=?, policy=? WHERE url=? AND status='queued'",
            (json.dumps(scores), policy, url),
        )
        return cur.rowcount > 0

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

    def transaction(self) -> _Transaction:
        """One atomic step: ``with state.transaction(): ...``."""
        return _Transaction(self.db)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many steps, one commit. Unlike a transaction, a failure inside keeps the steps
        done before it: each is whole on its own, and only the commits are shared."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


_RESOURCE_COLUMNS = (
    "url, oai_identifier, listed_datestamp, archived_datestamp, set_specs, status, etag,"
    " last_modified, payload_digest, sha1, sha256, record_id, warc_file, warc_offset,"
    " warc_length, warc_date, attempts"
)


_DUE = "AND (status != 'failed' OR updated + ? * (1 << MAX(attempts - 1, 0)) <= ?)"


def _due_args(due: Due | None) -> tuple[float, ...]:
    return () if due is None else (due.delay, due.now)


_FRONTIER_COLUMNS = "url, host, depth, policy, distance, scores, seq, via"


def _queued_row(row: tuple[Any, ...]) -> QueuedRow:
    url, host, depth, policy, distance, scores, seq, via = row
    return QueuedRow(url, host, depth, policy, distance, json.loads(scores), seq, via)


def _resource(row: tuple[object, ...]) -> Resource:
    values = list(row)
    values[4] = tuple(str(values[4]).split()) if values[4] else ()
    return Resource(*values)  # type: ignore[arg-type]
