"""The PostgreSQL state's tables are the SQLite state's, derived from its text
(``storage/postgres/schema.py``): every table and column of a new SQLite state is in a new
PostgreSQL state, with the type PostgreSQL names the same storage by."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from harvester.storage import open_state
from harvester.storage.postgres.schema import postgres_ddl
from tests.pgcluster import PGCluster

PG_TYPE = {
    "TEXT": "text",
    "INTEGER": "integer",
    "BIGINT": "bigint",
    "REAL": "double precision",
    "BLOB": "bytea",
}


def _sqlite_columns(path: Path) -> dict[tuple[str, str], str]:
    db = sqlite3.connect(path)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            (table, col[1]): col[2]
            for table in tables
            for col in db.execute(f"PRAGMA table_info({table})")
        }
    finally:
        db.close()


def _pg_columns(url: str) -> dict[tuple[str, str], str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema='public'"
        ).fetchall()
    return {(table, column): kind for table, column, kind in rows}


def test_every_sqlite_column_is_in_postgresql_with_its_type(
    tmp_path: Path, pg_cluster: PGCluster
) -> None:
    with open_state(f"sqlite:///{tmp_path / 'state.sqlite'}"):
        pass
    url = pg_cluster.new_database()
    with open_state(url):
        pass
    lite, pg = _sqlite_columns(tmp_path / "state.sqlite"), _pg_columns(url)
    assert lite  # the SQLite state has its tables
    assert {key: PG_TYPE[kind] for key, kind in lite.items()} == {k: pg[k] for k in lite}
    assert {table for table, _ in pg} - {table for table, _ in lite} == {"leases", "workers"}


def test_a_table_added_to_the_sqlite_text_is_made_on_postgresql(pg_cluster: PGCluster) -> None:
    added = "CREATE TABLE notes (\n    n BIGINT PRIMARY KEY,\n    at REAL NOT NULL,\n    b BLOB\n);"
    url = pg_cluster.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(postgres_ddl(added))
    kinds = {c: k for (t, c), k in _pg_columns(url).items() if t == "notes"}
    assert kinds == {"n": "bigint", "at": "double precision", "b": "bytea"}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("    attempts INTEGER,", "    attempts INTEGER,"),
        ("    updated REAL NOT NULL", "    updated DOUBLE PRECISION NOT NULL"),
        ("    metadata BLOB NOT NULL,  -- a BLOB", "    metadata BYTEA NOT NULL,  -- a BLOB"),
        ("    real_name TEXT,  -- not REAL", "    real_name TEXT,  -- not REAL"),
    ],
)
def test_only_column_types_are_renamed(line: str, expected: str) -> None:
    assert postgres_ddl(line) == expected


def test_reopening_a_running_job_makes_no_ddl(pg_cluster: PGCluster) -> None:
    """A worker joining a job must not ALTER the tables the others are writing (an ALTER
    waits for, and then blocks, every open transaction on them)."""
    url = pg_cluster.new_database()
    with open_state(url) as st:
        st.add_pending("http://s/", ["http://s/a"])
    with psycopg.connect(url) as other:  # a worker mid-transaction on resources
        other.execute("UPDATE resources SET attempts=1 WHERE url='http://s/a'")
        impatient = url + "?options=-c%20lock_timeout%3D1000"
        with open_state(impatient) as st:  # the next worker starts while that one writes
            assert st.get("http://s/a") is not None
