"""The SQLite state's sources: per site, the OAI-PMH endpoint it was found to have, and (in
``lists.py``) each list's bound and position."""

from __future__ import annotations

from harvester.storage.protocol import Source
from harvester.storage.sqlite.connection import SQLiteConnection
from harvester.storage.sqlite.lists import SQLiteLists


class SQLiteSources(SQLiteConnection):
    @property
    def lists(self) -> SQLiteLists:
        """Each list's bound and position."""
        return SQLiteLists(self.db)

    def source(self, site: str) -> Source | None:
        row = self.db.execute(
            "SELECT site, endpoint, granularity, deleted_record FROM sources WHERE site=?",
            (site,),
        ).fetchone()
        return None if row is None else Source(*row)

    def record_endpoint(self, site: str, endpoint: str, granularity: str, deleted: str) -> None:
        self.db.execute(
            "INSERT INTO sources (site, endpoint, granularity, deleted_record) VALUES (?,?,?,?)"
            " ON CONFLICT (site) DO UPDATE SET endpoint=excluded.endpoint,"
            " granularity=excluded.granularity, deleted_record=excluded.deleted_record",
            (site, endpoint, granularity, deleted),
        )
