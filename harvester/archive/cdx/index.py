"""The collection's CDXJ index (``indexes/index.cdxj``), kept current for pywb replay.

One line per capture, sorted, in the format pywb reads (the OpenWayback CDXJ form)::

    com,example)/page 20240501120000 {"url": "http://example.com/page", "mime": "text/html",
        "status": "200", "digest": "sha1:...", "length": "912", "offset": "3410",
        "filename": "harvest-....warc.gz"}

Lines are those cdxj-indexer (on warcio) writes, limited to captures: ``response``, ``resource``
and ``revisit`` records (the latter with mime ``warc/revisit``) that have a WARC-Target-URI
and are not ``application/warc-fields``. Metadata records (our DIDLs among them) are never
indexed, with or without a target URI: pywb would replay one as a capture of its URL. The
WARC writer makes each capture's line as it writes the record (:func:`capture_line`) and hands
a finished file's lines to :meth:`CdxIndex.add_lines`; files it did not finish, such as those
repaired after a crash, are read back with cdxj-indexer by :meth:`CdxIndex.add_warcs`.

Files are read as WARC only, and more strictly than warcio does: a record missing a mandatory
field, a block shorter than its Content-Length and bytes after the last complete record all
raise ArchiveError, and the index is left as it was. Gzip CRCs are not checked (warcio issue
#138), so a file cut inside the trailer of its last member passes; for a full check use
``harvester.archive.repair.verify_warc``.

The index is a main file plus one small file per WARC added since the main file was last
rewritten, ``<warc name>.cdxj`` beside it; pywb reads every ``*.cdxj`` of a collection's
``indexes/`` folder, so replay sees them all. Adding a WARC writes its own file, so an
incremental run costs what it adds, not the size of the collection. When the small files add
up to a quarter of the main file, or there are more than ``MAX_DELTAS`` of them, they are
merged into the main file and removed: each line is rewritten a bounded number of times. A
hidden manifest beside the main file names the WARC files it covers, so learning what is
indexed never reads the index.

Every file is written beside its final name, fsynced and renamed, so a reader or a SIGKILL
sees the old file or the new one, never a mix. A merge renames the manifest, then the main
file, then removes the small files: a kill in between leaves some lines in two files, never
in none, and the next merge (and :meth:`CdxIndex.lookup`) drops the duplicates. Writers in
different processes are serialised by an advisory ``flock`` on a lock file beside the index.
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from harvester.archive.cdx.key import url_key
from harvester.archive.cdx.line import WARC_SUFFIXES
from harvester.archive.files import fsync_dir
from harvester.exceptions import ArchiveError

__all__ = ["CdxIndex"]

log = logging.getLogger(__name__)

MAX_DELTAS = 32  # small per-WARC indexes kept beside the main file before a merge


class CdxIndex:
    """The CDXJ index whose main file is ``path``; see the module docstring.

    Each call reads the files afresh and holds no handle between calls, so there is nothing
    to open or close.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")
        self._manifest = self.path.with_name(f".{self.path.name}.warcs")

    def add_warcs(self, warc_paths: Sequence[Path]) -> int:
        """Index closed WARC files not indexed yet; return the lines added.

        Each new file gets its own small index, merged into the main file when the small
        ones have grown large enough. On ArchiveError the index is left as it was.
        """
        with self._locked():
            todo = _unindexed([Path(p) for p in warc_paths], self._adopted())
            added = 0
            with contextlib.ExitStack() as stack:  # read them all before writing any
                lines = [stack.enter_context(indexed_lines([warc])) for warc in todo]
                for warc, new in zip(todo, lines, strict=True):
                    added += self._write(self._delta(warc.name), new)
            if todo:
                self._merge_if_due()
        if todo:
            log.info("indexed %d lines from %d WARC files into %s", added, len(todo), self.path)
        return added

    def add_lines(self, warc_name: str, lines: Sequence[str]) -> int:
        """Index the WARC file ``warc_name`` from its capture lines, made as it was written;
        return the lines added (none if the file is indexed already)."""
        with self._locked():
            if warc_name in self._adopted():
                return 0
            added = self._write(self._delta(warc_name), sorted(lines))
            self._merge_if_due()
        return added

    def rebuild(self, warc_dir: Path) -> int:
        """Replace the index by one of every ``*.warc.gz`` in ``warc_dir``; return its lines."""
        paths = sorted(Path(warc_dir).glob("*.warc.gz"))
        with self._locked(), indexed_lines(paths) as new:
            self._write_manifest(p.name for p in paths)
            count = self._write(self.path, new)
            self._drop(self._deltas())
        log.info("rebuilt %s from %d WARC files: %d lines", self.path, len(paths), count)
        return count

    def lookup(self, url: str) -> list[dict[str, str]]:
        """The lines for ``url``, oldest first: JSON fields plus ``urlkey`` and ``timestamp``.

        As in pywb, URLs match by SURT key, so ``http://www.example.com/`` also finds
        ``https://example.com/``.
        """
        key = url_key(url)
        return [fields for fields in map(_parse_line, self._lines()) if fields["urlkey"] == key]

    def indexed_files(self) -> set[str]:
        """The WARC file names the index covers."""
        return self._main_covers() | _warc_names(self._deltas())

    # -- the files -------------------------------------------------------------------

    def _delta(self, warc_name: str) -> Path:
        return self.path.with_name(f"{warc_name}.cdxj")

    def _deltas(self) -> list[Path]:
        return sorted(
            p for suffix in WARC_SUFFIXES for p in self.path.parent.glob(f"*{suffix}.cdxj")
        )

    def _main_covers(self) -> set[str]:
        """The WARC files of the main file: from its manifest, else (an older index) its lines."""
        try:
            return set(self._manifest.read_text(encoding="utf-8").split())
        except FileNotFoundError:
            names = (_parse_line(line).get("filename") for line in _read_lines(self.path))
            return {name for name in names if name}
        except (OSError, UnicodeDecodeError) as exc:
            raise ArchiveError(f"cannot read {self._manifest}: {exc}") from exc

    def _adopted(self) -> set[str]:
        """:meth:`indexed_files`, after giving a main file from before manifests its own."""
        if self.path.exists() and not self._manifest.exists():
            self._write_manifest(self._main_covers())
        return self.indexed_files()

    def _write_manifest(self, names: Iterable[str]) -> None:
        self._write(self._manifest, (f"{name}\n" for name in sorted(names)))

    def _merge_if_due(self) -> None:
        """Fold the small indexes into the main file once they add up to a quarter of it (or
        are too many), in the order the module docstring gives."""
        deltas = self._deltas()
        small = sum(d.stat().st_size for d in deltas)
        if (
            self.path.exists()
            and len(deltas) <= MAX_DELTAS
            and small * 4 < self.path.stat().st_size
        ):
            return
        self._write_manifest(self._main_covers() | _warc_names(deltas))
        self._write(self.path, _unique(heapq.merge(*map(_read_lines, [self.path, *deltas]))))
        self._drop(deltas)

    def _drop(self, paths: Iterable[Path]) -> None:
        try:
            for path in paths:
                path.unlink(missing_ok=True)
            fsync_dir(self.path.parent)
        except OSError as exc:
            raise ArchiveError(f"cannot remove merged indexes: {exc}") from exc

    def _lines(self) -> Iterator[str]:
        """Every line of the index, sorted, each once."""
        files = [self.path, *self._deltas()]
        return _unique(heapq.merge(*map(_read_lines, files)))

    def _write(self, path: Path, lines: Iterable[str]) -> int:
        """Write ``lines`` to a new file beside ``path`` and rename it over ``path``."""
        fd, tmp = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
        )
        count, replaced = 0, False
        try:
            os.fchmod(fd, 0o644)  # as readable as the WARC files (mkstemp makes it 0600)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                for line in lines:
                    out.write(line)
                    count += 1
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
            replaced = True
            fsync_dir(self.path.parent)
        except OSError as exc:
            raise ArchiveError(f"cannot write {path}: {exc}") from exc
        finally:
            if not replaced:
                Path(tmp).unlink(missing_ok=True)
        return count

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the writers' lock, and drop temp files a killed writer left behind."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = open(self._lock_path, "a+b")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise ArchiveError(f"cannot lock {self.path}: {exc}") from exc
        with lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
                log.warning("removing %s, left by an interrupted index update", stale)
                stale.unlink(missing_ok=True)
            yield


@contextlib.contextmanager
def indexed_lines(paths: Sequence[Path]) -> Iterator[Iterable[str]]:
    """The sorted CDXJ lines of WARC files read back (cdxj-indexer, imported only then)."""
    from harvester.archive.cdx.reader import read_back

    with read_back(paths) as lines:
        yield lines


def _unindexed(paths: Sequence[Path], indexed: set[str]) -> list[Path]:
    """``paths`` whose base names are not indexed yet, each name once."""
    todo: dict[str, Path] = {}
    for path in paths:
        if path.name in indexed or path.name in todo:
            # debug: the end of every run passes every WARC of the collection through here
            log.debug("%s is indexed already or listed twice; skipping it", path)
        else:
            todo[path.name] = path
    return list(todo.values())


def _parse_line(line: str) -> dict[str, str]:
    """A CDXJ line's JSON fields plus ``urlkey`` and ``timestamp``."""
    try:
        urlkey, timestamp, block = line.rstrip("\n").split(" ", 2)
        fields = json.loads(block)
        return {**fields, "urlkey": urlkey, "timestamp": timestamp}
    except (ValueError, TypeError) as exc:  # TypeError: a JSON block that is no object
        raise ArchiveError(f"malformed CDXJ line {line[:200]!r}; rebuild the index") from exc


def _read_lines(path: Path) -> Iterator[str]:
    """The lines of a CDXJ file, each ending in a newline; none if there is no file."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield line if line.endswith("\n") else line + "\n"
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"cannot read {path}: {exc}") from exc


def _warc_names(deltas: Iterable[Path]) -> set[str]:
    """The WARC files that small indexes are named after."""
    return {delta.name.removesuffix(".cdxj") for delta in deltas}


def _unique(lines: Iterable[str]) -> Iterator[str]:
    """Sorted ``lines`` without repeats (a line left in two files by an interrupted merge)."""
    last = None
    for line in lines:
        if line != last:
            yield line
        last = line
