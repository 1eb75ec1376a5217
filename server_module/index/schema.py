"""The index's tables: their layout, its version, and the values kept in ``meta``.

``files`` holds one row per file ever seen under the document root, keyed by its relative
path (bytes, so names that are not UTF-8 work), and one per identifier a new base URL
retired (:mod:`server_module.index.rebase`); covering indexes let a page of headers be read from
an index alone, in (datestamp, identifier) order. ``meta`` holds the schema version, the
secret that signs resumption tokens, the base URL, the item counts per MIME type and the
generation (:mod:`server_module.index.writer` keeps the last three). ``analyses`` holds the
plugins' results (:mod:`server_module.plugins.store`), one row per file version (its SHA-256
digest) and plugin label; version 2 added it, and an index of version 1 gains it on opening.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from server_module.exceptions import IndexSchemaError

SCHEMA_VERSION = "2"
MIGRATES_FROM = ("1",)  # versions whose tables this one only adds to

_SCHEMA = f"""
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    relpath BLOB NOT NULL UNIQUE,
    identifier TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    sha1 TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    mime TEXT NOT NULL,
    mime_major TEXT NOT NULL,
    title TEXT,
    datestamp INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
-- Covering indexes: a page of headers is read from the index alone, in (datestamp, id) order.
CREATE INDEX IF NOT EXISTS files_by_date ON files (datestamp, identifier, deleted, mime);
CREATE INDEX IF NOT EXISTS files_by_major
    ON files (mime_major, datestamp, identifier, deleted, mime);
CREATE INDEX IF NOT EXISTS files_by_mime ON files (mime, datestamp, identifier, deleted);
-- A batch of plugin results restamps the files of its digests.
CREATE INDEX IF NOT EXISTS files_by_sha256 ON files (sha256);
CREATE TABLE IF NOT EXISTS analyses (
    sha256 TEXT NOT NULL,
    label TEXT NOT NULL,
    tool TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    ran_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER,
    output BLOB NOT NULL,
    seconds REAL NOT NULL,
    facts TEXT NOT NULL,
    PRIMARY KEY (sha256, label)
) WITHOUT ROWID;
INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
INSERT OR IGNORE INTO meta (key, value) VALUES ('secret', randomblob(32));
COMMIT;
"""


def create_tables(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> None:
    """Create the tables and a token secret where missing, after checking the version of an
        index ``path`` that has them (:class:`IndexSchemaError` for another version); an index of
    an older version this one only adds tables to (``MIGRATES_FROM``) gains them."""
    try:
        version = meta(conn, "schema_version")
    except sqlite3.OperationalError:  # a new file: no meta table yet
        version = None
    if version not in (None, SCHEMA_VERSION, *MIGRATES_FROM):
        raise IndexSchemaError(f"{path}: schema {version!r}, need {SCHEMA_VERSION}")
    conn.executescript(_SCHEMA)


def meta(conn: sqlite3.Connection, key: str) -> Any:
    """The value kept under ``key``; None if there is none."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]
