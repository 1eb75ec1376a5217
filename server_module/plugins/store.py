"""The plugins' results in the index (the ``analyses`` table of
:mod:`server_module.index.schema`): kept per file version, by its SHA-256 digest and the
plugin's label, so that a file is analysed once per version and a copy of a file is not
analysed again; results of versions no file has any more are dropped with each refresh that
changes files.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from coop_common.analysis import Analysis

_COLUMNS = "sha256, label, tool, tool_version, ran_at, status, exit_code, output, seconds, facts"
_BATCH = 500  # digests per IN (...) query: under SQLite's limit on variables


def unanalysed(conn: sqlite3.Connection, label: str) -> Iterator[tuple[bytes, str, str, int, int]]:
    """(relpath, sha256, mime, size, mtime_ns) of each present file ``label`` has not
    analysed."""
    return conn.execute(
        "SELECT relpath, sha256, mime, size, mtime_ns FROM files WHERE deleted = 0 AND NOT EXISTS"
        " (SELECT 1 FROM analyses a WHERE a.sha256 = files.sha256 AND a.label = ?)",
        (label,),
    )


def analysed(conn: sqlite3.Connection, sha256: str, label: str) -> bool:
    """Whether ``label`` has a result for the version ``sha256``."""
    sql = "SELECT 1 FROM analyses WHERE sha256 = ? AND label = ?"
    return conn.execute(sql, (sha256, label)).fetchone() is not None


def save(conn: sqlite3.Connection, analyses: Iterable[Analysis]) -> None:
    """Keep ``analyses`` (in the caller's transaction)."""
    conn.executemany(
        f"INSERT OR REPLACE INTO analyses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                a.sha256,
                a.label,
                a.tool,
                a.tool_version,
                a.ran_at,
                a.status,
                a.exit_code,
                a.output,
                a.seconds,
                json.dumps(a.facts, sort_keys=True),
            )
            for a in analyses
        ],
    )


def prune(conn: sqlite3.Connection) -> None:
    """Drop the results of versions no present file has."""
    conn.execute(
        "DELETE FROM analyses WHERE sha256 NOT IN (SELECT sha256 FROM files WHERE deleted = 0)"
    )


def load(conn: sqlite3.Connection, digests: Sequence[str]) -> dict[str, tuple[Analysis, ...]]:
    """The results kept for each of ``digests``, by digest, each in label order."""
    found: dict[str, list[Analysis]] = defaultdict(list)
    unique = sorted(set(digests))
    for start in range(0, len(unique), _BATCH):
        chunk = unique[start : start + _BATCH]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM analyses WHERE sha256 IN ({marks}) ORDER BY sha256, label",
            chunk,
        )
        for row in rows:
            sha, label, tool, version, ran_at, status, code, output, seconds, facts = row
            found[sha].append(
                Analysis(
                    sha,
                    label,
                    tool,
                    version,
                    ran_at,
                    status,
                    code,
                    bytes(output),
                    seconds,
                    json.loads(facts),
                )
            )
    return {k: tuple(v) for k, v in found.items()}
