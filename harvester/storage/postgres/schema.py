"""The PostgreSQL state's tables: the SQLite state's (``sqlite/schema.py``), derived from its
text by :func:`postgres_ddl`, plus what only a shared job has.

The SQLite text is the one schema: a table added there is a table here. :func:`postgres_ddl`
gives its column types PostgreSQL's names (``REAL`` is ``DOUBLE PRECISION``, ``BLOB`` is
``BYTEA``; ``TEXT``, ``INTEGER`` and ``BIGINT`` are the same words). Then
:data:`SHARED` adds to ``resources`` the worker that archived each and its host (a column
computed from the URL, indexed with the frontier's hosts for the claims), and the ``leases``
and ``workers`` tables.

A lease row is named ``host:<host>`` (the host's URLs are fetched by its holder alone) or
``list:<endpoint>`` (the endpoint's lists are listed by its holder alone); a row
``sitemaps:<host>``, never held, says that a seed host's robots.txt and sitemaps were read
(by the holder of its host lease, once in the job). ``token`` grows by
one at every claim: the fencing token an acknowledgement must still match. Times are seconds
since the epoch on the database's clock, so the workers' clocks never need to agree.
"""

from __future__ import annotations

import re

from harvester.storage.sqlite.schema import SCHEMA as SQLITE_SCHEMA
from harvester.storage.sqlite.schema import SCHEMA_VERSION

__all__ = ["SCHEMA", "SCHEMA_VERSION", "postgres_ddl"]

_TYPES = {"REAL": "DOUBLE PRECISION", "BLOB": "BYTEA"}
_TYPE = re.compile(r"^(\s+\w+ )(REAL|BLOB)\b", re.MULTILINE)


def postgres_ddl(sqlite_ddl: str) -> str:
    """``sqlite_ddl`` with PostgreSQL's column types (only where a column's type stands:
    names and comments are left alone).

    >>> postgres_ddl("CREATE TABLE t (\\n    at REAL NOT NULL,  -- a REAL\\n    b BLOB\\n);")
    'CREATE TABLE t (\\n    at DOUBLE PRECISION NOT NULL,  -- a REAL\\n    b BYTEA\\n);'
    """
    return _TYPE.sub(lambda m: m.group(1) + _TYPES[m.group(2)], sqlite_ddl)


_HOST = r"lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^:/?#]*)'))"
SHARED = f"""
ALTER TABLE resources ADD COLUMN IF NOT EXISTS worker TEXT;  -- whose acknowledgement archived it
ALTER TABLE resources ADD COLUMN IF NOT EXISTS host TEXT GENERATED ALWAYS AS ({_HOST}) STORED;
CREATE INDEX IF NOT EXISTS resources_host ON resources (site, status, host);
CREATE INDEX IF NOT EXISTS frontier_host ON frontier (site, status, host);
CREATE TABLE IF NOT EXISTS leases (
    site TEXT NOT NULL,
    name TEXT NOT NULL,              -- host:<host> | list:<endpoint> | sitemaps:<host>
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
"""
SCHEMA = postgres_ddl(SQLITE_SCHEMA) + SHARED
