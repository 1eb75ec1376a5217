"""The file index: which files of the site are OAI-PMH items, and since when.

:class:`FileIndex` owns the SQLite file kept outside the document root (its tables:
:mod:`server_module.index.schema`) and its connections. A refresh walks the tree
(:mod:`server_module.index.scan`) and the rows side by side, both in byte order of the path,
holding only the changes (:mod:`server_module.index.changes`); it hashes only files whose stat
changed, and writes every change in one short transaction (:mod:`server_module.index.writer`),
stamped with the second it takes the write lock in (the plugins analyse the new and changed
files after that commit: :mod:`server_module.index.analyser`): a list's first page waits
for such a transaction to commit (:meth:`FileIndex.snapshot`), so a harvester asking
``from=<its last harvest>`` misses nothing even when ``cp -p`` or ``rsync -a`` bring in files
with old mtimes.

Reading goes through :meth:`FileIndex.snapshot`: a read transaction on a per-thread connection,
so a ``count`` and the page after it see one committed state (WAL mode keeps readers and the
refresh out of each other's way), read through a :class:`~server_module.index.snapshot.Snapshot`.
Only this module, its helpers named here, :mod:`server_module.index.rebase` and
:mod:`server_module.plugins.store` speak SQL.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Literal

from coop_common.component import Component
from server_module.exceptions import BaseURLChange, IndexSchemaError
from server_module.index.analyser import LOCK_SUFFIX, Analyser, Pass, analyse_pending
from server_module.index.changes import RefreshStats, find_changes
from server_module.index.scan import DEFAULT_EXCLUDES, Found, OutsideLink, Scanner
from server_module.index.schema import create_tables, meta
from server_module.index.snapshot import Snapshot
from server_module.index.writer import adopt_base_url, known_rows, write_changes
from server_module.plugins.runner import PluginRunner

__all__ = [
    "DEFAULT_EXCLUDES",
    "FileIndex",
    "IndexSchemaError",
    "RefreshStats",
    "default_index_path",
]

log = logging.getLogger(__name__)

# A file whose ctime is this close to the scan may change again within the same timestamp
# tick (coarse kernel clocks; 1 s on some file systems) without its stat changing: store its
# ctime as 0 so the next refresh hashes it once more (git's "racily clean" problem).
RACY_WINDOW_NS = 2_000_000_000
# The index's own files, should the index live inside the document root.
INDEX_SUFFIXES = (b"", b"-wal", b"-shm", b"-journal", b".lock", b".owner", LOCK_SUFFIX)
# What a refresh does about the plugins' work once its rows are committed: run it to the end
# ("wait"), have the index's own thread run it ("later"), or leave it to a later call.
Analyse = Literal["wait", "later", "none"]


def default_index_path(docroot: str | os.PathLike[str]) -> Path:
    """The index beside (never inside) the document root.

    >>> str(default_index_path("/srv/www/site/"))
    '/srv/www/.site.oai-index.sqlite'
    """
    root = Path(os.path.abspath(docroot))
    if not root.name:
        raise ValueError("the file system root needs an explicit index path")
    return root.parent / f".{root.name}.oai-index.sqlite"


def _await_writer(conn: sqlite3.Connection) -> None:
    """Take and release the write lock: a write transaction begun before has committed."""
    conn.execute("PRAGMA query_only = OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("COMMIT")
    finally:
        conn.execute("PRAGMA query_only = ON")


class _Reader(sqlite3.Connection):
    """A thread's read connection: a subclass, so that the index can hold it weakly."""


class FileIndex(Component):
    """The SQLite index of a document root's files (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        docroot: str | os.PathLike[str],
        base_url: str,
        *,
        exclude: Sequence[str] = DEFAULT_EXCLUDES,
        allow_outside: Sequence[str | os.PathLike[str]] = (),
        rebase: bool = False,
        clock: Callable[[], float] = time.time,
        plugins: PluginRunner | None = None,
    ) -> None:
        self.path = Path(path)
        self.rebase = rebase  # may a base URL other than the index's rename every item?
        self.plugins = plugins
        self.docroot = Path(docroot)
        self.base_url = base_url.rstrip("/")
        self.exclude = tuple(exclude)
        self.allow_outside = tuple(allow_outside)
        self.outside: list[OutsideLink] = []  # the last refresh's unfollowed links out of the root
        self._clock = clock
        self._local = threading.local()
        # Weakly: a thread's reader is freed, and so closed, once the thread has ended (a
        # server may start a thread a request): by the garbage collector, for a connection
        # is in a cycle with its own statement cache. close() closes those still alive.
        self._readers: weakref.WeakSet[_Reader] = weakref.WeakSet()
        self._readers_lock = threading.Lock()
        self._secret: bytes | None = None
        self._analyser = Analyser(self._pass(plugins)) if plugins else None

    # -- life cycle -------------------------------------------------------------------------

    def open(self) -> FileIndex:
        """Create the schema (WAL mode, a token secret) if needed; check its version."""
        conn = self._connect()
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            create_tables(conn, self.path)
            self._adopt_base_url(conn)
            self._secret = bytes(meta(conn, "secret"))
        finally:
            conn.close()
        return self

    def close(self) -> None:
        """Stop the plugins' thread (after its batch) and close every reader connection; the
        index can be opened again."""
        if self._analyser is not None:
            self._analyser.close()
        with self._readers_lock:
            readers, self._readers = list(self._readers), weakref.WeakSet()
        for conn in readers:
            conn.close()
        self._local = threading.local()
        self._secret = None

    def secret(self) -> bytes:
        """32 random bytes made once per index (for signing resumption tokens)."""
        if self._secret is None:
            raise RuntimeError("the index is not open")
        return self._secret

    # -- reading ----------------------------------------------------------------------------

    @contextmanager
    def snapshot(self, *, settled: bool = False) -> Iterator[Snapshot]:
        """A read transaction on this thread's connection; nested calls share it.

        ``settled`` first waits for a write transaction in progress to commit. A refresh
        stamps its rows before it commits, possibly in an earlier second: a list bounded at
        the current second must see them, or a harvest ``from`` that second would miss them.
        Any write that takes the lock afterwards is stamped with a later clock reading.
        """
        conn = self._reader()
        local = self._local
        if local.depth == 0:
            if settled:
                _await_writer(conn)
            conn.execute("BEGIN")
            conn.execute("SELECT 1 FROM meta LIMIT 1")  # the WAL snapshot starts at a read
        local.depth += 1
        try:
            yield Snapshot(conn)
        finally:
            local.depth -= 1
            if local.depth == 0:
                conn.execute("COMMIT")

    def _reader(self) -> sqlite3.Connection:
        if self._secret is None:
            raise RuntimeError("the index is not open")
        local = self._local
        # A forked worker must not use its parent's connection.
        if getattr(local, "pid", None) != os.getpid():
            local.conn = self._connect(_Reader)
            local.conn.execute("PRAGMA query_only = ON")
            local.pid, local.depth = os.getpid(), 0
            with self._readers_lock:
                self._readers.add(local.conn)
        conn: sqlite3.Connection = local.conn
        return conn

    # -- refreshing -------------------------------------------------------------------------

    def refresh(self, blocking: bool = True, *, analyse: Analyse = "wait") -> RefreshStats | None:
        """Bring the index up to date with the disk; None if another refresh holds the lock.

        The rows are committed first; then, with plugins, ``analyse`` says what becomes of
        the analyses due (see :data:`Analyse`): a server has them run ``"later"``."""
        if self._secret is None:
            raise RuntimeError("the index is not open")
        with self._refresh_lock(blocking) as acquired:
            if not acquired:
                log.info("another refresh of %s is running", self.path)
                return None
            started = time.monotonic()
            conn = self._connect()
            try:
                racy_ns = time.time_ns() - RACY_WINDOW_NS
                changes = find_changes(
                    known_rows(conn), self._scan(), racy_ns=racy_ns, base_url=self.base_url
                )
                if changes:
                    # readers that need every row of its second wait: snapshot(settled=True)
                    write_changes(conn, changes, self._clock)
            finally:
                conn.close()
        stats = changes.stats(time.monotonic() - started)
        log.info(
            "refreshed %s: %d scanned, %d hashed, %d added, %d changed, %d deleted, "
            "%d unchanged in %.3f s",
            self.docroot,
            stats.scanned,
            stats.hashed,
            stats.added,
            stats.changed,
            stats.deleted,
            stats.unchanged,
            stats.seconds,
        )
        if analyse == "wait":
            stats = replace(stats, analysed=self.analyse())
        elif analyse == "later":
            self.analyse_later()
        return stats

    # -- the plugins' work ------------------------------------------------------------------

    def analyse(self) -> int:
        """Run the analyses due to the end, in this thread; the number of results made."""
        if self._analyser is None:
            return 0
        return analyse_pending(self._analyser.job)

    def analyse_later(self) -> None:
        """Have the index's own thread run the analyses due (:mod:`.analyser`)."""
        if self._analyser is not None:
            self._analyser.later()

    def wait_analysed(self, timeout: float = 60.0) -> bool:
        """Wait until this process's plugin thread is idle; False after ``timeout`` seconds."""
        return self._analyser is None or self._analyser.wait(timeout)

    def _pass(self, plugins: PluginRunner) -> Pass:
        root = os.fsencode(os.path.abspath(self.docroot))
        lock = Path(os.fsdecode(os.fsencode(self.path) + LOCK_SUFFIX))
        return Pass(self._connect, lock, plugins, root, self._clock)

    @contextmanager
    def _refresh_lock(self, blocking: bool) -> Iterator[bool]:
        """One refresh at a time across processes: flock on ``<index>.lock``."""
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # releases the lock

    def _scan(self) -> Iterator[Found]:
        index = os.fsencode(os.path.realpath(self.path))
        skip = frozenset(index + suffix for suffix in INDEX_SUFFIXES)
        scanner = Scanner(os.fsencode(self.docroot), self.exclude, skip, self.allow_outside)
        self.outside = scanner.outside
        return scanner.walk()

    # -- helpers ----------------------------------------------------------------------------

    def _connect(self, kind: type[sqlite3.Connection] = sqlite3.Connection) -> sqlite3.Connection:
        # Connections are used by one thread at a time; close() may run in another thread.
        conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False, factory=kind
        )
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _adopt_base_url(self, conn: sqlite3.Connection) -> None:
        """Identifiers embed the base URL: when it changes, retire the old ones (:mod:`rebase`),
        but only when asked to (``rebase``), for a harvester then sees every item deleted."""
        old = meta(conn, "base_url")
        if old == self.base_url:
            return
        (items,) = conn.execute("SELECT count(*) FROM files WHERE relpath >= x'01'").fetchone()
        if old is not None and items and not self.rebase:
            raise BaseURLChange(
                f"the index {self.path} names its {items} items under {old}; under "
                f"{self.base_url} every one would be renamed and its old identifier become a "
                f"deleted record: pass --rebase to do so, or --base-url {old}"
            )
        with self._refresh_lock(blocking=True):
            adopt_base_url(conn, self.base_url, self._clock)
