"""Watches the document root for changes (inotify, through ``watchdog``), so that a refresh
follows a change within seconds rather than at the next ``refresh_interval``.

It only says that something changed; the refresh (:mod:`server_module.index.refresher`) finds out
what. Events that change nothing a refresh could see (a file opened, read or closed unwritten:
the refresh's own reading) and events on the index's own files are ignored, so a refresh does
not set off the next one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

log = logging.getLogger(__name__)

# The event types that can change what a refresh sees (watchdog's names; an older watchdog
# lacks some). Listed rather than excluded: a new kind of read-side event must not let each
# refresh, by reading files, set off the next.
CHANGES = frozenset({"attrib", "closed", "created", "deleted", "modified", "moved"})


class _Handler(FileSystemEventHandler):
    def __init__(self, on_change: Callable[[], None], ignore: frozenset[str]) -> None:
        self.on_change, self.ignore = on_change, ignore

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in CHANGES:
            return
        paths = {os.fsdecode(event.src_path), os.fsdecode(event.dest_path)} - {""}
        if paths - self.ignore:
            self.on_change()


class Watcher:
    """Calls ``on_change`` (from the watch's own thread) whenever something under ``root``
    changes, except the files named in ``ignore``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        on_change: Callable[[], None],
        ignore: Collection[str] = (),
    ) -> None:
        self.root = os.fsdecode(root)
        self.on_change = on_change
        self.ignore = frozenset(ignore)
        self._observer: BaseObserver | None = None

    def open(self) -> bool:
        """Start watching; False (logged in one line) if the system refuses, e.g. at its limit
        of inotify watches: the refresh interval then remains the only trigger."""
        observer = Observer()
        try:
            observer.schedule(_Handler(self.on_change, self.ignore), self.root, recursive=True)
            observer.start()
        except OSError as exc:
            log.warning("cannot watch %s (%s); refreshing on the interval only", self.root, exc)
            observer.stop()
            return False
        self._observer = observer
        return True

    def close(self) -> None:
        """Stop watching and wait for the watch's threads to end."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
