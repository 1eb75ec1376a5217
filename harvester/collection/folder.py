"""A collection folder as the commands that look at one see it (status, verify, report, wacz).

The layout is the harvest's (``settings.py``): ``warcs/*.warc.gz``, ``state.sqlite``,
``indexes/*.cdxj``, ``runs.jsonl``. Opening one never creates anything: a folder without a
state and without WARC files is not a collection. A collection this process may not write
(a read-only disk, a folder without write permission) is read read-only, its state too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harvester.archive.files import OPEN_SUFFIX, WARC_SUFFIX
from harvester.exceptions import NotACollection
from harvester.run.runlog import RunLog
from harvester.storage.protocol import State
from harvester.storage.sqlite.state import SQLiteState


@dataclass(frozen=True)
class Collection:
    """The paths of the collection in ``folder``."""

    folder: Path

    @classmethod
    def at(cls, folder: Path) -> Collection:
        """The collection in ``folder``; NotACollection when it holds none."""
        found = cls(folder)
        if not found.state_path.is_file() and not found.warcs():
            raise NotACollection(f"{folder}: not a collection (no state.sqlite, no warcs/)")
        return found

    @property
    def state_path(self) -> Path:
        return self.folder / "state.sqlite"

    @property
    def warc_dir(self) -> Path:
        return self.folder / "warcs"

    @property
    def index_dir(self) -> Path:
        return self.folder / "indexes"

    @property
    def runs(self) -> RunLog:
        return RunLog(self.folder)

    def warcs(self) -> list[Path]:
        """The finished WARC files, in name order (``.open`` ones are being written)."""
        return sorted(self.warc_dir.glob(f"*{WARC_SUFFIX}"))

    def open_warcs(self) -> list[Path]:
        return sorted(self.warc_dir.glob(f"*{WARC_SUFFIX}{OPEN_SUFFIX}"))

    @property
    def writable(self) -> bool:
        """Whether this process may write the folder and its state (``access(2)``, which also
        says no on a read-only file system)."""
        paths = [self.folder, self.warc_dir, self.state_path]
        return all(os.access(p, os.W_OK) for p in paths if p.exists())

    def indexes(self) -> list[Path]:
        """The CDXJ files pywb would read: the main index and the small per-WARC ones."""
        return sorted(self.index_dir.glob("*.cdxj"))

    @contextmanager
    def state(self) -> Iterator[State | None]:
        """The state, open, or None when the collection has none."""
        if not self.state_path.is_file():
            yield None
            return
        with SQLiteState(self.state_path, read_only=not self.writable) as state:
            yield state
