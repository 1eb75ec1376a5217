"""The SQLite state's tables: the schema a new state file gets, and its version.

A state file of an older version is brought to this one on open by ``migration.py``. The
column types and constraints are standard SQL, and this text is also the PostgreSQL state's
(``postgres/schema.py`` renames ``REAL`` and ``BLOB``): a column that may outgrow 32 bits is
``BIGINT``, which SQLite stores as any ``INTEGER``.
"""

from __future__ import annotations

SCHEMA_VERSION = 2
ANY = "*"  # the set and prefix of a list bound carried over from schema 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    site TEXT PRIMARY KEY,
    endpoint TEXT,
    granularity TEXT,
    deleted_record TEXT            -- (schema 1 kept its one list bound and position here)
);
CREATE TABLE IF NOT EXISTS resources (
    url TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    oai_identifier TEXT,
    listed_datestamp TEXT,         -- the version the provider listed last
    archived_datestamp TEXT,       -- the version now in the WARCs
    set_specs TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    etag TEXT,
    last_modified TEXT,
    payload_digest TEXT,           -- as in WARC-Payload-Digest (sha1, base32)
    sha1 TEXT,                     -- hex digests of the archived payload, for DIDL records
    sha256 TEXT,
    http_status INTEGER,
    record_id TEXT,
    warc_file TEXT,
    warc_offset BIGINT,            -- BIGINT: SQLite's INTEGER, PostgreSQL's 64-bit integer
    warc_length BIGINT,
    warc_date TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,  -- failed attempts at the listed version
    last_error TEXT,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS resources_status ON resources (status, url);
CREATE TABLE IF NOT EXISTS frontier (   -- the crawl's discovered URLs, one row per URL ever queued
    url TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    host TEXT NOT NULL,
    depth INTEGER NOT NULL,
    policy TEXT NOT NULL,
    distance INTEGER NOT NULL,        -- link hops since its policy began (seed or switch)
    scores TEXT NOT NULL,             -- JSON: the named scores of the URL
    seq BIGINT NOT NULL,              -- discovery order
    status TEXT NOT NULL,             -- queued | done
    via TEXT                          -- the page that linked it first
);
CREATE INDEX IF NOT EXISTS frontier_queue ON frontier (site, status, seq);
CREATE INDEX IF NOT EXISTS resources_record ON resources (record_id);
CREATE TABLE IF NOT EXISTS lists (
    endpoint TEXT NOT NULL,
    set_spec TEXT NOT NULL,          -- '' for the whole repository
    prefix TEXT NOT NULL,            -- the metadataPrefix listed
    harvested_until TEXT,            -- responseDate of this key's last list archived in full
    list_from TEXT,                  -- the list under way or listed: its from, next token and
    list_token TEXT,                 -- the responseDate of its first page
    list_response_date TEXT,
    list_state TEXT NOT NULL DEFAULT 'idle',  -- idle | active | listed
    PRIMARY KEY (endpoint, set_spec, prefix)
);
-- records mode (harvester/records/): items, their formats, and linked resources
CREATE TABLE IF NOT EXISTS items (
    endpoint TEXT NOT NULL,
    identifier TEXT NOT NULL,
    datestamp TEXT NOT NULL,
    set_specs TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,            -- pending | partial | archived | deleting | deleted
    didl_record_id TEXT,             -- the item's last DIDL record
    updated REAL NOT NULL,
    PRIMARY KEY (endpoint, identifier)
);
CREATE INDEX IF NOT EXISTS items_by_status ON items (endpoint, status, identifier);
CREATE TABLE IF NOT EXISTS item_formats (
    endpoint TEXT NOT NULL,
    identifier TEXT NOT NULL,
    prefix TEXT NOT NULL,
    datestamp TEXT NOT NULL,
    metadata BLOB NOT NULL,          -- the <metadata> child, serialised
    PRIMARY KEY (endpoint, identifier, prefix)
);
CREATE TABLE IF NOT EXISTS endpoint_modes (
    endpoint TEXT PRIMARY KEY,
    records INTEGER NOT NULL         -- 1: its identifiers are not URLs (records mode)
);
CREATE TABLE IF NOT EXISTS linked (
    url TEXT PRIMARY KEY,            -- a linked resource (its capture is in resources)
    record_type TEXT NOT NULL,       -- response | revisit: the capture's WARC record type
    mime TEXT,                       -- its Content-Type as last sent
    links TEXT NOT NULL DEFAULT ''   -- what it points at: "kind url" lines
);
"""
