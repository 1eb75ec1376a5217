"""Upgrades of a state file written by an older harvester, one step per schema version.

Each step is one transaction, so a harvester killed during an upgrade leaves the file as it
was, and the next run upgrades it again.
"""

from __future__ import annotations

import logging
import sqlite3

from harvester.storage.sqlite.schema import ANY
from harvester.storage.sqlite.transaction import Transaction

log = logging.getLogger(__name__)


def migrate(db: sqlite3.Connection, version: int, path: object) -> None:
    """Bring a state of ``version`` to the current schema (the new tables already exist)."""
    if version < 2:
        _to_2(db)
        log.info("upgraded the state %s to schema 2 (a bound per list)", path)


def _to_2(db: sqlite3.Connection) -> None:
    """Schema 1 kept one ``from`` bound per site and one list position. The bound becomes the
    bound of every list of the site's endpoint (set and prefix ``*``: schema 1 did not record
    which sets and format it listed); a list that was under way restarts from it, so nothing
    is skipped. ``attempts`` now counts the failed attempts at the listed version: a failed
    resource starts at one, any other at none."""
    with Transaction(db):
        db.execute("UPDATE resources SET attempts = CASE WHEN status='failed' THEN 1 ELSE 0 END")
        db.execute(
            "INSERT INTO lists (endpoint, set_spec, prefix, harvested_until)"
            " SELECT endpoint, ?, ?, harvested_until FROM sources"
            " WHERE endpoint IS NOT NULL AND harvested_until IS NOT NULL ON CONFLICT DO NOTHING",
            (ANY, ANY),
        )
        db.execute("UPDATE meta SET value='2' WHERE key='schema'")
