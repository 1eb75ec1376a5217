"""The state's items: per (endpoint, OAI identifier), what records mode last archived.

An item (records mode) is an OAI-PMH record in one or more metadata formats, plus the
resources its metadata links to. Each row keeps the item's datestamp and sets as last listed,
and its status::

    pending    listed new or changed; its DIDL record is not written yet
    partial    its DIDL record is written, but some linked resources failed: a later run
               fetches those again and writes the record anew
    archived   its DIDL record names the listed version and every linked resource
    deleting   listed as deleted; the deletion note is not written yet
    deleted    the deletion note is written

Each format's metadata is kept (``item_formats``, until the item is deleted), so the record
of an item listed in several formats holds all of them, whichever list came first, and a run
killed between listing and writing finishes the item on the next run. A
version listed again with the datestamp already stored is not touched (the overlap of an
incremental list, a list restarted after an expired token, a repeated page).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from harvester.storage.protocol import Header, Item
from harvester.storage.sqlite.connection import marks

UNSETTLED = ("pending", "partial", "deleting")


class ItemState:
    """The ``items`` and ``item_formats`` tables, on the state's connection."""

    def __init__(self, db: Any) -> None:  # sqlite3.Connection, or the PostgreSQL adapter
        self.db = db

    def note(self, endpoint: str, prefix: str, header: Header, metadata: bytes) -> str:
        """Store one listed record; returns what it was: new, changed, deleted or unchanged.

        Call it inside the page's transaction."""
        return self.note_page(endpoint, prefix, [(header, metadata)])[0]

    def note_page(
        self, endpoint: str, prefix: str, records: Sequence[tuple[Header, bytes]]
    ) -> list[str]:
        """Store a page's listed records, as :meth:`note` would one after another, in a few
        statements for the whole page; what each record was. Call it inside the page's
        transaction."""
        ids = list(dict.fromkeys(header.identifier for header, _metadata in records))
        known, stored = self._stored(endpoint, prefix, ids)
        outcomes, formats, rows = [], [], []
        now = time.time()
        for header, metadata in records:
            outcome, status = _outcome(header, known.get(header.identifier), stored)
            outcomes.append(outcome)
            if outcome == "unchanged":
                continue
            known[header.identifier] = (header.datestamp, status)
            if status == "pending":
                stored[header.identifier] = header.datestamp
                formats.append((endpoint, header.identifier, prefix, header.datestamp, metadata))
            specs = " ".join(header.set_specs)
            rows.append((endpoint, header.identifier, header.datestamp, specs, status, now))
        if formats:
            self.db.executemany(
                "INSERT INTO item_formats VALUES (?,?,?,?,?)"
                " ON CONFLICT (endpoint, identifier, prefix) DO UPDATE SET"
                " datestamp=excluded.datestamp, metadata=excluded.metadata",
                formats,
            )
        if rows:
            self.db.executemany(
                "INSERT INTO items (endpoint, identifier, datestamp, set_specs, status, updated)"
                " VALUES (?,?,?,?,?,?) ON CONFLICT (endpoint, identifier) DO UPDATE SET"
                " datestamp=excluded.datestamp, set_specs=excluded.set_specs,"
                " status=excluded.status, updated=excluded.updated",
                rows,
            )
        return outcomes

    def _stored(
        self, endpoint: str, prefix: str, ids: list[str]
    ) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """Of the items stored among ``ids``: identifier -> (datestamp, status), and
        identifier -> datestamp of the metadata stored in ``prefix`` (one statement a part:
        an item's formats are stored with it, never without)."""
        known: dict[str, tuple[str, str]] = {}
        stored: dict[str, str] = {}
        for part in _parts(ids):
            rows = self.db.execute(
                "SELECT i.identifier, i.datestamp, i.status, f.datestamp FROM items i"
                " LEFT JOIN item_formats f ON f.endpoint=i.endpoint"
                " AND f.identifier=i.identifier AND f.prefix=?"
                f" WHERE i.endpoint=? AND i.identifier IN ({marks(len(part))})",
                (prefix, endpoint, *part),
            )
            for identifier, datestamp, status, format_datestamp in rows:
                known[identifier] = (datestamp, status)
                if format_datestamp is not None:
                    stored[identifier] = format_datestamp
        return known, stored

    def unsettled(self, endpoint: str, before: float, batch: int = 500) -> Iterator[Item]:
        """Items whose DIDL record or deletion note is still to be written (a partial one
        only if not tried since ``before``), in identifier order, read in batches."""
        after = ""
        while True:
            rows = self.db.execute(
                "SELECT identifier, datestamp, set_specs, status, didl_record_id FROM items"
                " WHERE endpoint=? AND status IN (?,?,?) AND identifier > ?"
                " AND (status != 'partial' OR updated < ?) ORDER BY identifier LIMIT ?",
                (endpoint, *UNSETTLED, after, before, batch),
            ).fetchall()
            if not rows:
                return
            for identifier, datestamp, specs, status, record_id in rows:
                yield Item(identifier, datestamp, tuple(specs.split()), status, record_id)
            after = rows[-1][0]

    def get(self, endpoint: str, identifier: str) -> Item | None:
        row = self.db.execute(
            "SELECT identifier, datestamp, set_specs, status, didl_record_id FROM items"
            " WHERE endpoint=? AND identifier=?",
            (endpoint, identifier),
        ).fetchone()
        return None if row is None else Item(row[0], row[1], tuple(row[2].split()), *row[3:])

    def formats(self, endpoint: str, identifier: str) -> list[tuple[str, bytes]]:
        """(prefix, metadata) of every format stored for the item, by prefix."""
        return self.formats_of(endpoint, [identifier]).get(identifier, [])

    def formats_of(self, endpoint: str, ids: Sequence[str]) -> dict[str, list[tuple[str, bytes]]]:
        """identifier -> (prefix, metadata) of every format stored for it, by prefix; items
        without any are left out."""
        found: dict[str, list[tuple[str, bytes]]] = {}
        for part in _parts(list(dict.fromkeys(ids))):
            rows = self.db.execute(
                "SELECT identifier, prefix, metadata FROM item_formats WHERE endpoint=?"
                f" AND identifier IN ({marks(len(part))}) ORDER BY identifier, prefix",
                (endpoint, *part),
            )
            for identifier, prefix, data in rows:
                found.setdefault(identifier, []).append((prefix, bytes(data)))
        return found

    def settle(self, endpoint: str, identifier: str, status: str, record_id: str) -> None:
        """The item's DIDL record (or deletion note) ``record_id`` is written out."""
        self.settle_many(endpoint, [(identifier, status, record_id)])

    def settle_many(self, endpoint: str, settled: Sequence[tuple[str, str, str]]) -> None:
        """Each item's DIDL record (or deletion note) is written out: (identifier, status,
        record ID) triples, in one statement for them all (two with deletions)."""
        now = time.time()
        self.db.executemany(
            "UPDATE items SET status=?, didl_record_id=?, updated=? WHERE endpoint=? AND"
            " identifier=?",
            [
                (status, record_id, now, endpoint, identifier)
                for identifier, status, record_id in settled
            ],
        )
        gone = [
            (endpoint, identifier) for identifier, status, _id in settled if status == "deleted"
        ]
        if gone:
            self.db.executemany("DELETE FROM item_formats WHERE endpoint=? AND identifier=?", gone)

    def linked(self, url: str) -> tuple[str, str | None, list[tuple[str, str]]] | None:
        """A linked resource's record type, type of content and (kind, url) links."""
        row = self.db.execute(
            "SELECT record_type, mime, links FROM linked WHERE url=?", (url,)
        ).fetchone()
        if row is None:
            return None
        pairs = [line.split(" ", 1) for line in row[2].splitlines() if " " in line]
        return row[0], row[1], [(kind, target) for kind, target in pairs]

    def note_linked(
        self, url: str, record_type: str, mime: str | None, links: list[tuple[str, str]] | None
    ) -> None:
        """A linked resource's new capture; ``links`` None keeps those of the last one."""
        text = None if links is None else "".join(f"{k} {u}\n" for k, u in links)
        self.db.execute(
            "INSERT INTO linked VALUES (?,?,?,COALESCE(?, ''))"
            " ON CONFLICT (url) DO UPDATE SET"
            " record_type=excluded.record_type, mime=COALESCE(excluded.mime, linked.mime),"
            " links=COALESCE(?, linked.links)",  # qualified: PostgreSQL asks
            (url, record_type, mime, text, text),
        )

    def records_mode(self, endpoint: str) -> bool | None:
        """Whether an earlier run found ``endpoint``'s identifiers not to be URLs; None if
        no run decided yet."""
        row = self.db.execute(
            "SELECT records FROM endpoint_modes WHERE endpoint=?", (endpoint,)
        ).fetchone()
        return None if row is None else bool(row[0])

    def decide_mode(self, endpoint: str, records: bool) -> None:
        self.db.execute(
            "INSERT INTO endpoint_modes VALUES (?,?) ON CONFLICT (endpoint) DO UPDATE SET"
            " records=excluded.records",
            (endpoint, int(records)),
        )

    def add_resource(self, site: str, url: str) -> None:
        """Queue a linked resource in the state's resources (if new), inside the caller's
        commit: the capture, conditional GET and retries are kept there, as for any URL."""
        self.db.execute(
            "INSERT INTO resources (url, site, status, updated) VALUES (?,?,'pending',?)"
            " ON CONFLICT(url) DO NOTHING",
            (url, site, time.time()),
        )

    def counts(self, endpoint: str) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT status, COUNT(*) FROM items WHERE endpoint=? GROUP BY status", (endpoint,)
        ).fetchall()
        return {status: count for status, count in rows}


def _outcome(
    header: Header, row: tuple[str, str] | None, stored: dict[str, str]
) -> tuple[str, str]:
    """What a listed record is (new, changed, deleted, unchanged) given the item's stored
    (datestamp, status) and its formats' datestamps, and the item's status after it."""
    if row is not None and row[0] > header.datestamp:
        return "unchanged", row[1]  # an older version than the one archived
    gone = row is not None and row[1] in ("deleting", "deleted")
    if header.deleted:
        if gone and row is not None and row[0] == header.datestamp:
            return "unchanged", row[1]
        return "deleted", "deleting"
    if row is not None and row[0] == header.datestamp and not gone:
        if stored.get(header.identifier) == header.datestamp:
            return "unchanged", row[1]
        return "changed", "pending"
    return ("new" if row is None else "changed"), "pending"


def _parts(ids: list[str], size: int = 500) -> Iterator[list[str]]:
    """``ids`` in parts small enough for one statement's parameters."""
    for start in range(0, len(ids), size):
        yield ids[start : start + size]
