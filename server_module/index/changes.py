"""What a refresh finds: the folder walk merged with the index's rows.

Both come in byte order of the relative path (:meth:`Scanner.walk`, and ``ORDER BY relpath``
over the index's UNIQUE index), so one pass over the two finds every addition, change and
deletion while holding only those, never the whole tree or the whole index. Only a file that
is new, or whose stat changed, is read and hashed (:func:`read_version`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from server_module.index.filemeta import Stat, Version, extract_title, guess_mime, read_version
from server_module.index.scan import Found
from server_module.records import make_identifier


@dataclass(frozen=True, slots=True)
class RefreshStats:
    """What one refresh saw and did. ``unchanged`` includes stat-only updates."""

    scanned: int
    hashed: int
    added: int
    changed: int
    deleted: int
    unchanged: int
    seconds: float
    analysed: int = 0  # plugin results made (a file once per plugin)

    def sentence(self) -> str:
        """What the refresh did, for a person.

        >>> RefreshStats(3, 2, 1, 1, 0, 1, 0.25).sentence()
        '3 files scanned (2 hashed): 1 added, 1 changed, 0 deleted, 1 unchanged, in 0.25 s'
        """
        return (
            f"{self.scanned} files scanned ({self.hashed} hashed): {self.added} added, "
            f"{self.changed} changed, {self.deleted} deleted, {self.unchanged} unchanged, "
            f"in {self.seconds:.2f} s"
        )


class Known(NamedTuple):
    """An index row, as far as a refresh needs it."""

    relpath: bytes
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    sha256: str
    deleted: int

    @property
    def stat(self) -> Stat:
        return (self.size, self.mtime_ns, self.ctime_ns, self.inode)


@dataclass
class Changes:
    """Everything a refresh will write, gathered before the write transaction opens."""

    scanned: int = 0
    upserts: list[tuple[object, ...]] = field(default_factory=list)
    touches: list[tuple[int, int, bytes]] = field(default_factory=list)
    deletions: list[bytes] = field(default_factory=list)
    hashed: int = 0
    added: int = 0
    changed: int = 0
    unchanged: int = 0

    def __bool__(self) -> bool:
        return bool(self.upserts or self.touches or self.deletions)

    def gone(self, old: Known) -> None:
        """A row whose file the walk did not find: a deletion, unless it is one already."""
        if not old.deleted:
            self.deletions.append(old.relpath)

    def stats(self, seconds: float) -> RefreshStats:
        return RefreshStats(
            scanned=self.scanned,
            hashed=self.hashed,
            added=self.added,
            changed=self.changed,
            deleted=len(self.deletions),
            unchanged=self.unchanged,
            seconds=round(seconds, 3),
        )


def find_changes(
    known: Iterator[Known], found: Iterator[Found], *, racy_ns: int, base_url: str
) -> Changes:
    """Merge the rows and the walk, both in relative-path order; hash only what is new or
    whose stat changed. Files whose ctime is at or after ``racy_ns`` are stored unsettled."""
    changes = Changes()
    old, previous = next(known, None), b""
    for rel, path, st in found:
        if rel <= previous:  # a merge out of order would take present files as deleted
            raise RuntimeError(f"the walk gave {rel!r} after {previous!r}")
        changes.scanned, previous = changes.scanned + 1, rel
        while old is not None and old.relpath < rel:
            changes.gone(old)
            old = next(known, None)
        match = old if old is not None and old.relpath == rel else None
        if match is not None:
            old = next(known, None)
        if match is not None and not match.deleted and match.stat == st:
            changes.unchanged += 1
            continue
        version = read_version(path)
        if version is None:  # vanished or unreadable since the walk: as if not found
            if match is not None:
                changes.gone(match)
            continue
        changes.hashed += 1
        version = version._replace(stat=_settled(version.stat, racy_ns))
        _classify(changes, rel, match, version, base_url)
    while old is not None:
        changes.gone(old)
        old = next(known, None)
    return changes


def _settled(found: Stat, racy_ns: int) -> Stat:
    """The stat to store: with ctime 0 if the file changed too recently to trust, so that the
    next refresh hashes it once more (``RACY_WINDOW_NS`` in :mod:`server_module.index.fileindex`).

    >>> _settled((1, 2, 3, 4), racy_ns=10), _settled((1, 2, 30, 4), racy_ns=10)
    ((1, 2, 3, 4), (1, 2, 0, 4))
    """
    size, mtime_ns, ctime_ns, inode = found
    return found if ctime_ns < racy_ns else (size, mtime_ns, 0, inode)


def _classify(changes: Changes, rel: bytes, old: Known | None, new: Version, base_url: str) -> None:
    size, mtime_ns, ctime_ns, inode = new.stat
    if old is not None and not old.deleted:
        if (old.sha256, old.stat[:2]) == (new.sha256, new.stat[:2]):
            # Same bytes and same Last-Modified: not a new version (e.g. a `touch -c` that
            # restored the mtime, or a copy over itself).
            changes.touches.append((ctime_ns, inode, rel))
            changes.unchanged += 1
            return
        changes.changed += 1
    else:
        changes.added += 1
    mime = guess_mime(rel)
    title = extract_title(new.head) if mime == "text/html" else None
    major = mime.partition("/")[0]
    identifier = make_identifier(base_url, rel)
    changes.upserts.append(
        (rel, identifier, size, mtime_ns, ctime_ns, inode, new.sha1, new.sha256, mime, major, title)
    )
