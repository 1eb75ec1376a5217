"""The index's read side: one consistent view of the rows, for lists, counts and records.

A :class:`Snapshot` reads inside the read transaction :meth:`FileIndex.snapshot
<server_module.index.fileindex.FileIndex.snapshot>` opens, so a ``count`` and the pages after it see
one committed state. Lists are keyset-paged on ``(datestamp, identifier)`` over covering
indexes, narrowed by a :class:`Selection`: a selective harvest's ``from``, ``until`` and
``set`` (OAI-PMH 2.0 §2.7.1, §2.7.2) and the position after the last item delivered.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, replace
from typing import Any

from server_module.plugins import store
from server_module.records import FileRecord, mime_for_set_spec, set_specs_for

__all__ = ["Header", "Selection", "Snapshot"]

Header = tuple[str, int, int, str]  # identifier, datestamp, deleted, mime

_HEADER_COLUMNS = "identifier, datestamp, deleted, mime"
_RECORD_COLUMNS = (
    "identifier, relpath, datestamp, deleted, size, mtime_ns, mime, sha1, sha256, title"
)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which rows a list reads: inclusive datestamp bounds, a set, and a keyset position.

    ``after`` is the (datestamp, identifier) of the last item already delivered.
    """

    start: int | None = None
    until: int | None = None
    set_spec: str | None = None
    after: tuple[int, str] | None = None


EVERY_ROW = Selection()


def _filters(selection: Selection) -> tuple[str, list[object]]:
    """``FROM ... WHERE ...`` for a selection, naming the index that orders it."""
    clauses: list[str] = []
    params: list[object] = []
    index = "files_by_date"
    if selection.set_spec is not None:
        major, mime = mime_for_set_spec(selection.set_spec)
        index = "files_by_major" if mime is None else "files_by_mime"
        clauses.append("mime_major = ?" if mime is None else "mime = ?")
        params.append(major if mime is None else mime)
    if selection.start is not None:
        clauses.append("datestamp >= ?")
        params.append(selection.start)
    if selection.until is not None:
        clauses.append("datestamp <= ?")
        params.append(selection.until)
    if selection.after is not None:
        clauses.append("(datestamp, identifier) > (?, ?)")
        params.extend(selection.after)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return f"FROM files INDEXED BY {index}{where}", params


def _page(columns: str, selection: Selection, limit: int) -> tuple[str, list[object]]:
    """The query for up to ``limit`` rows of ``columns`` in (datestamp, identifier) order."""
    source, params = _filters(selection)
    return f"SELECT {columns} {source} ORDER BY datestamp, identifier LIMIT ?", [*params, limit]


def _in_set(mime: str, set_spec: str | None) -> bool:
    if set_spec is None:
        return True
    major, full = mime_for_set_spec(set_spec)
    return mime == full if full is not None else mime.partition("/")[0] == major


def _record(row: Any) -> FileRecord:
    """A row in ``_RECORD_COLUMNS`` order as a record (SQLite has no booleans)."""
    return FileRecord(row[0], row[1], row[2], bool(row[3]), *row[4:])


class Snapshot:
    """One consistent, read-only view of the index: everything committed when it opened."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def generation(self) -> int:
        """How many refreshes have changed the index so far: equal numbers, equal lists."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return 0 if row is None else int(row[0])

    def headers(self, selection: Selection = EVERY_ROW, *, limit: int) -> list[Header]:
        """(identifier, datestamp, deleted, mime) in (datestamp, identifier) order."""
        return self._conn.execute(*_page(_HEADER_COLUMNS, selection, limit)).fetchall()

    def records(self, selection: Selection = EVERY_ROW, *, limit: int) -> list[FileRecord]:
        """Like :meth:`headers`, with everything the index knows of each item."""
        rows = self._conn.execute(*_page(_RECORD_COLUMNS, selection, limit))
        return self._with_analyses([_record(row) for row in rows])

    def _with_analyses(self, records: list[FileRecord]) -> list[FileRecord]:
        """The records, each with the plugins' results for its version."""
        found = store.load(self._conn, [r.sha256 for r in records if not r.deleted])
        if not found:
            return records
        return [replace(r, analyses=found.get(r.sha256, ())) for r in records]

    def count(self, selection: Selection = EVERY_ROW) -> int:
        """How many items (deleted ones included) the selection holds.

        A list with no ``from`` and an ``until`` at or after the newest datestamp (every
        harvest's first list) is answered from counts kept per MIME type at each refresh,
        instead of counting the whole index.
        """
        if selection.start is None and selection.after is None:
            known = self._stored_count(selection.until, selection.set_spec)
            if known is not None:
                return known
        source, params = _filters(selection)
        (total,) = self._conn.execute(f"SELECT count(*) {source}", params).fetchone()
        return int(total)

    def _stored_count(self, until: int | None, set_spec: str | None) -> int | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'mime_counts'").fetchone()
        if row is None:
            return None
        newest = self.newest_datestamp()
        if until is not None and newest is not None and until < newest:
            return None
        counts: dict[str, int] = json.loads(row[0])
        return sum(n for mime, n in counts.items() if _in_set(mime, set_spec))

    def get(self, identifier: str) -> FileRecord | None:
        return self._one("identifier", identifier)

    def get_by_relpath(self, relpath: bytes) -> FileRecord | None:
        return self._one("relpath", relpath)

    def _one(self, column: str, value: object) -> FileRecord | None:
        sql = f"SELECT {_RECORD_COLUMNS} FROM files WHERE {column} = ?"
        row = self._conn.execute(sql, (value,)).fetchone()
        return None if row is None else self._with_analyses([_record(row)])[0]

    def earliest_datestamp(self) -> int | None:
        """The smallest datestamp of any row, deleted ones included; None when empty."""
        (earliest,) = self._conn.execute("SELECT min(datestamp) FROM files").fetchone()
        return None if earliest is None else int(earliest)

    def newest_datestamp(self) -> int | None:
        """The largest datestamp of any row, deleted ones included; None when empty."""
        (newest,) = self._conn.execute("SELECT max(datestamp) FROM files").fetchone()
        return None if newest is None else int(newest)

    def set_specs(self) -> list[str]:
        """Every set that has an item: each MIME major type and each full type."""
        specs: set[str] = set()
        for (mime,) in self._conn.execute(
            "SELECT DISTINCT mime FROM files INDEXED BY files_by_mime"
        ):
            specs.update(set_specs_for(mime))
        return sorted(specs)
