"""A ResourceSync source: the file index, the ledger that follows it, and its documents.

Both deployments use it: the served provider syncs the ledger before answering each document
request (a no-op while the index is unchanged), the static command once per run, closing that
run's Change List. Files are read (for their MD5) through the same public-path rules as every
other open of the provider (:func:`server_module.files.docroot.open_public`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from server_module.files.docroot import open_public
from server_module.index.fileindex import FileIndex
from server_module.resourcesync.documents import MAX_ENTRIES
from server_module.resourcesync.ledger import Ledger
from server_module.resourcesync.publication import Publication


class Source:
    """Open with :meth:`open`; :meth:`sync`, then read documents from :meth:`publication`."""

    def __init__(
        self,
        index: FileIndex,
        ledger_path: Path,
        *,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.index = index
        self.ledger = Ledger(ledger_path, clock)
        self.max_entries = max_entries
        self.clock = clock

    def open(self) -> Source:
        self.ledger.open()
        return self

    def sync(self, *, close_run: bool = False) -> int:
        """Take in the index's changes; how many there were."""
        return self.ledger.sync(self.index, self._open_file, close_run=close_run)

    @contextmanager
    def publication(self) -> Iterator[Publication]:
        """The documents as of now, from one read of the ledger."""
        with self.ledger.reader() as reader:
            yield Publication(self.index.base_url, reader, int(self.clock()), self.max_entries)

    def _open_file(self, relpath: bytes) -> BinaryIO | None:
        index = self.index
        outside = tuple(Path(p) for p in index.allow_outside)
        opened = open_public(index.docroot, relpath, index.exclude, outside)
        return None if opened is None else opened[0]
