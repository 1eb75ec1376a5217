"""One atomic step on an SQLite connection in autocommit mode: ``BEGIN IMMEDIATE`` takes the
write lock at once (so two harvesters never deadlock upgrading a read lock), and the block
commits whole or rolls back whole."""

from __future__ import annotations

import sqlite3


class Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
