"""The SQLite state's resources: per URL, what was listed, what was archived and where.

A listed header makes its resource pending only when it names a version newer than the one
archived (or failed and still being retried); a capture is stored whole with its mark.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from harvester.storage.protocol import RETRYING, Capture, Due, Listed, ListedPage, Resource
from harvester.storage.sqlite.connection import SQLiteConnection, marks
from harvester.storage.sqlite.lists import SQLiteLists

_COLUMNS = (
    "url, oai_identifier, listed_datestamp, archived_datestamp, set_specs, status, etag,"
    " last_modified, payload_digest, sha1, sha256, record_id, warc_file, warc_offset,"
    " warc_length, warc_date, attempts, http_status"
)
# A failed resource is due once ``delay * 2 ** (attempts - 1)`` seconds have passed.
_DUE = (
    "AND (status <> 'failed'"
    " OR updated + ? * (1 << CASE WHEN attempts > 1 THEN attempts - 1 ELSE 0 END) <= ?)"
)
_CAPTURE = (
    "record_id=?, warc_file=?, warc_offset=?, warc_length=?, warc_date=?, payload_digest=?,"
    " sha1=?, sha256=?, etag=?, last_modified=?"
)


class SQLiteResources(SQLiteConnection):
    # -- listing -----------------------------------------------------------------------

    def record_page(self, site: str, page: ListedPage) -> tuple[int, int]:
        """Store a page's headers and its list's position after it, in one transaction.

        Returns how many resources became pending and how many deletions were noted. The
        list's responseDate is that of its first page: the moment the list was bounded.
        """
        now = time.time()
        pending = deleting = 0
        with self.transaction():
            for item in page.headers:
                added = self._note_listed(site, item, now)
                pending += added == "pending"
                deleting += added == "deleting"
            SQLiteLists(self.db).page(page.key, page.token, page.response_date)
        return pending, deleting

    def _note_listed(self, site: str, item: Listed, now: float) -> str | None:
        row = self.db.execute(
            "SELECT status, archived_datestamp, listed_datestamp FROM resources WHERE url=?",
            (item.url,),
        ).fetchone()
        status = _listed_status(item, row)
        if status is None:
            return None
        self.db.execute(
            "INSERT INTO resources (url, site, oai_identifier, listed_datestamp, set_specs,"
            " status, updated) VALUES (?,?,?,?,?,?,?) ON CONFLICT (url) DO UPDATE SET"
            " oai_identifier=excluded.oai_identifier, listed_datestamp=excluded.listed_datestamp,"
            " set_specs=excluded.set_specs, status=excluded.status, updated=excluded.updated,"
            " attempts=0",
            (
                item.url,
                site,
                item.identifier,
                item.datestamp,
                " ".join(item.set_specs),
                status,
                now,
            ),
        )
        return status

    def add_pending(self, site: str, urls: Iterable[str]) -> int:
        """Queue URLs that no list named (seeds of a crawl, re-fetches)."""
        now = time.time()
        with self.transaction():
            before = self.db.total_changes
            self.db.executemany(
                "INSERT INTO resources (url, site, status, updated) VALUES (?,?,'pending',?)"
                " ON CONFLICT (url) DO NOTHING",
                ((u, site, now) for u in urls),
            )
            return self.db.total_changes - before

    # -- reading -----------------------------------------------------------------------

    def resources(
        self, site: str, statuses: tuple[str, ...], batch: int = 1000, due: Due | None = None
    ) -> Iterator[Resource]:
        """Resources in the given statuses, in URL order, read in batches (bounded memory);
        with ``due``, failed ones only once their wait is over."""
        after = ""
        while True:
            rows = self.db.execute(
                f"SELECT {_COLUMNS} FROM resources WHERE site=?"
                f" AND status IN ({marks(len(statuses))})"
                f" AND url > ? {_DUE if due is not None else ''} ORDER BY url LIMIT ?",
                (site, *statuses, after, *_due_args(due), batch),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _resource(row)
            after = rows[-1][0]

    def get(self, url: str) -> Resource | None:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM resources WHERE url=?", (url,)).fetchone()
        return None if row is None else _resource(row)

    def known_record_ids(self, record_ids: Iterable[str]) -> set[str]:
        ids = list(record_ids)
        known: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.execute(
                f"SELECT record_id FROM resources WHERE record_id IN ({marks(len(chunk))})",
                chunk,
            )
            known.update(r[0] for r in rows)
        return known

    def count(self, site: str, statuses: tuple[str, ...], due: Due | None = None) -> int:
        """How many of the site's resources are in ``statuses`` (and due, as in
        :meth:`resources`): read through the status index, so it costs what it counts."""
        row = self.db.execute(
            f"SELECT COUNT(*) FROM resources WHERE status IN ({marks(len(statuses))}) AND site=?"
            f" {_DUE if due is not None else ''}",
            (*statuses, site, *_due_args(due)),
        ).fetchone()
        return int(row[0])

    def counts(self, site: str) -> dict[str, int]:
        """The site's resources by status; its seed and what its pages loaded are none of
        them."""
        rows = self.db.execute(
            "SELECT status, COUNT(*) FROM resources WHERE site=?"
            " AND status NOT IN ('seed','loaded')"
            " GROUP BY status",
            (site,),
        )
        return {status: n for status, n in rows}

    def sites(self) -> list[str]:
        rows = self.db.execute("SELECT site FROM resources UNION SELECT site FROM sources")
        return sorted(r[0] for r in rows)

    def failures(self, site: str) -> Iterator[tuple[str, int | None, str | None]]:
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

    # -- marks -------------------------------------------------------------------------

    def mark_archived(self, url: str, capture: Capture, datestamp: str | None) -> None:
        """Called only after the capture's WARC records were flushed to disk."""
        self.db.execute(
            "UPDATE resources SET status='archived',"
            f" archived_datestamp=COALESCE(?, listed_datestamp), {_CAPTURE}, http_status=?,"
            " attempts=0, last_error=NULL, updated=? WHERE url=?",
            (datestamp, *_capture_args(capture), capture.http_status, time.time(), url),
        )

    def remember_capture(self, url: str, capture: Capture) -> None:
        """Keep what a capture was (for revisit detection) without calling it archived."""
        self.db.execute(
            f"UPDATE resources SET {_CAPTURE} WHERE url=?", (*_capture_args(capture), url)
        )

    def remember_seed(self, site: str, url: str, capture: Capture) -> None:
        """Keep the last capture of the site's start URL, unless a list names that URL (a
        listed resource's row is left alone)."""
        self._remember(site, url, capture, "seed")

    def remember_loaded(self, site: str, url: str, capture: Capture) -> None:
        """Keep the last capture of a resource a browser-loaded page loaded, unless a list
        or the crawl has a row for that URL (theirs is left alone)."""
        self._remember(site, url, capture, "loaded")

    def _remember(self, site: str, url: str, capture: Capture, status: str) -> None:
        """``capture`` as the last of ``url``, in a row of ``status``, which no count of the
        site includes; a row of another status is left alone."""
        self.db.execute(
            "INSERT INTO resources (url, site, status, http_status, updated, record_id,"
            " warc_file, warc_offset, warc_length, warc_date, payload_digest, sha1, sha256,"
            " etag, last_modified) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT (url) DO UPDATE SET site=excluded.site,"
            " http_status=excluded.http_status, updated=excluded.updated,"
            " record_id=excluded.record_id, warc_file=excluded.warc_file,"
            " warc_offset=excluded.warc_offset, warc_length=excluded.warc_length,"
            " warc_date=excluded.warc_date, payload_digest=excluded.payload_digest,"
            " sha1=excluded.sha1, sha256=excluded.sha256, etag=excluded.etag,"
            " last_modified=excluded.last_modified WHERE resources.status=excluded.status",
            (url, site, status, capture.http_status, time.time(), *_capture_args(capture)),
        )

    def mark_failed(self, url: str, error: str, http_status: int | None = None) -> None:
        """One more failed attempt, made now (the back-off counts from ``updated``)."""
        self._attempt_failed(url, "failed", error, http_status)

    def abandon(self, url: str, error: str, http_status: int | None = None) -> None:
        """The last attempt at the listed version failed: fetch it no more."""
        self._attempt_failed(url, "abandoned", error, http_status)

    def _attempt_failed(self, url: str, status: str, error: str, http_status: int | None) -> None:
        self.db.execute(
            "UPDATE resources SET status=?, last_error=?, http_status=?,"
            " attempts=attempts+1, updated=? WHERE url=?",
            (status, error, http_status, time.time(), url),
        )

    def note(self, url: str, text: str) -> None:
        """Keep a remark on an archived resource (it stays archived)."""
        self.db.execute("UPDATE resources SET last_error=? WHERE url=?", (text, url))

    def mark_deleted(self, url: str) -> None:
        self.db.execute(
            "UPDATE resources SET status='deleted', updated=? WHERE url=?", (time.time(), url)
        )

    def mark_gone(self, url: str, http_status: int) -> None:
        """A crawled URL that now answers 404 or 410; its captures are kept."""
        self.db.execute(
            "UPDATE resources SET status='gone', http_status=?, attempts=attempts+1, updated=?"
            " WHERE url=?",
            (http_status, time.time(), url),
        )


def _listed_status(item: Listed, row: tuple[str, str | None, str | None] | None) -> str | None:
    """The status a listed header gives its resource, or None to leave the row alone."""
    if item.deleted:
        return None if row is not None and row[0] in ("deleted", "deleting") else "deleting"
    if row is not None and row[0] == "archived" and (row[1] or "") >= item.datestamp:
        return None  # this version is archived already
    if row is not None and row[0] in RETRYING and (row[2] or "") >= item.datestamp:
        return None  # this version failed before: its retries keep their schedule
    return "pending"


def _capture_args(capture: Capture) -> tuple[object, ...]:
    """The values of ``_CAPTURE``'s placeholders, in its order."""
    return (
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
    )


def _due_args(due: Due | None) -> tuple[float, ...]:
    return () if due is None else (due.delay, due.now)


def _resource(row: tuple[object, ...]) -> Resource:
    values = list(row)
    values[4] = tuple(str(values[4]).split()) if values[4] else ()
    return Resource(*values)  # type: ignore[arg-type]
