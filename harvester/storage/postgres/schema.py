"""The PostgreSQL state's tables: the SQLite state's (``sqlite/schema.py``) with PostgreSQL's
types (times as ``DOUBLE PRECISION``, offsets as ``BIGINT``), each resource's host as a column
computed from its URL, and two tables of a shared job: ``leases`` and ``workers``.

A lease row is named ``host:<host>`` (the host's URLs are fetched by its holder alone) or
``list:<endpoint>`` (the endpoint's lists are listed by its holder alone). ``token`` grows by
one at every claim: the fencing token an acknowledgement must still match. Times are seconds
since the epoch on the database's clock, so the workers' clocks never need to agree.
"""

from __future__ import annotations

SCHEMA_VERSION = 2  # the SQLite state's version: the same tables
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    site TEXT PRIMARY KEY,
    endpoint TEXT,
    granularity TEXT,
    deleted_record TEXT
);
CREATE TABLE IF NOT EXISTS resources (
    url TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    oai_identifier TEXT,
    listed_datestamp TEXT,
    archived_datestamp TEXT,
    set_specs TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    etag TEXT,
    last_modified TEXT,
    payload_digest TEXT,
    sha1 TEXT,
    sha256 TEXT,
    http_status INTEGER,
    record_id TEXT,
    warc_file TEXT,
    warc_offset BIGINT,
    warc_length BIGINT,
    warc_date TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    updated DOUBLE PRECISION NOT NULL,
    worker TEXT,                     -- the worker whose acknowledgement archived it last
    host TEXT GENERATED ALWAYS AS
        (lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^:/?#]*)')))
        STORED
);
CREATE INDEX IF NOT EXISTS resources_status ON resources (status, url);
CREATE INDEX IF NOT EXISTS resources_host ON resources (site, status, host);
CREATE INDEX IF NOT EXISTS resources_record ON resources (record_id);
CREATE TABLE IF NOT EXISTS frontier (
    url TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    host TEXT NOT NULL,
    depth INTEGER NOT NULL,
    policy TEXT NOT NULL,
    distance INTEGER NOT NULL,
    scores TEXT NOT NULL,
    seq BIGINT NOT NULL,
    status TEXT NOT NULL,
    via TEXT
);
CREATE INDEX IF NOT EXISTS frontier_queue ON frontier (site, status, seq);
CREATE INDEX IF NOT EXISTS frontier_host ON frontier (site, status, host);
CREATE TABLE IF NOT EXISTS lists (
    endpoint TEXT NOT NULL,
    set_spec TEXT NOT NULL,
    prefix TEXT NOT NULL,
    harvested_until TEXT,
    list_from TEXT,
    list_token TEXT,
    list_response_date TEXT,
    list_state TEXT NOT NULL DEFAULT 'idle',
    PRIMARY KEY (endpoint, set_spec, prefix)
);
CREATE TABLE IF NOT EXISTS leases (
    site TEXT NOT NULL,
    name TEXT NOT NULL,              -- host:<host> | list:<endpoint>
    worker TEXT,                     -- the holder; NULL when free
    token BIGINT NOT NULL DEFAULT 0, -- the fencing token: one more at every claim
    expires DOUBLE PRECISION NOT NULL DEFAULT 0,
    next_at DOUBLE PRECISION NOT NULL DEFAULT 0,  -- politeness handed over: no request before
    PRIMARY KEY (site, name)
);
CREATE TABLE IF NOT EXISTS workers (
    site TEXT NOT NULL,
    worker TEXT NOT NULL,
    seen DOUBLE PRECISION NOT NULL,  -- its last heartbeat
    started DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (site, worker)
);
-- records mode (harvester/records/): items, their formats, and linked resources
CREATE TABLE IF NOT EXISTS items (
    endpoint TEXT NOT NULL,
    identifier TEXT NOT NULL,
    datestamp TEXT NOT NULL,
    set_specs TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,            -- pending | partial | archived | deleting | deleted
    didl_record_id TEXT,             -- the item's last DIDL record
    updated DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (endpoint, identifier)
);
CREATE INDEX IF NOT EXISTS items_by_status ON items (endpoint, status, identifier);
CREATE TABLE IF NOT EXISTS item_formats (
    endpoint TEXT NOT NULL,
    identifier TEXT NOT NULL,
    prefix TEXT NOT NULL,
    datestamp TEXT NOT NULL,
    metadata BYTEA NOT NULL,          -- the <metadata> child, serialised
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
