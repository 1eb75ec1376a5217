"""The folder scan: which files under the document root are items, as the site serves them.

The scan walks the tree with bytes paths throughout (names that are not UTF-8 work) and skips
what a web server would not serve or what is not the site's content:

* hidden names (starting with ``.``), at any depth;
* names matching an exclude pattern (``fnmatch`` globs, editor backups by default);
* symlinks whose target leaves the document root or passes through anything hidden; a
  symlinked folder inside the root is followed unless it loops back to a folder above it;
* anything that is neither a regular file nor a folder (fifos, devices, sockets);
* the index's own files, should the index live inside the document root.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import stat
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import NamedTuple

from server_module.filemeta import Stat

log = logging.getLogger(__name__)

DEFAULT_EXCLUDES: tuple[str, ...] = ("*~", "*.swp", "*.swo", "#*#")


class _Dir(NamedTuple):
    path: bytes  # as reached from the document root (may go through a symlink)
    prefix: bytes  # relative path of the folder, with a trailing "/" unless it is the root
    real: bytes  # realpath of the folder
    seen: frozenset[bytes]  # realpaths of the folders above, to break symlink loops


class Found(NamedTuple):
    """A file that is an item."""

    relpath: bytes
    path: bytes  # the path to read it by
    stat: Stat


class Scanner:
    """Walks the document root as the site serves it, with bytes paths throughout."""

    def __init__(self, docroot: bytes, exclude: Sequence[str], skip: frozenset[bytes]) -> None:
        self._root = docroot
        self._real_root = os.path.realpath(docroot)
        pattern = "|".join(f"(?:{fnmatch.translate(p)})" for p in exclude) or "(?!)"
        self._exclude = re.compile(pattern, re.DOTALL).match
        self._skip = skip

    def walk(self) -> Iterator[Found]:
        """Every file that is an item, in byte order of relative path: the index's order, so a
        refresh can merge the two without holding either in memory.

        Each folder's entries are sorted with a folder's name followed by ``/``, which puts
        ``a-b`` before everything under ``a/``, as byte order of the whole paths does. Only one
        folder's entries per level of depth are held at a time.
        """
        # A missing or unreadable root (an unmounted disk) must fail the refresh, not read as
        # "every file was deleted".
        os.scandir(self._root).close()
        real = self._real_root
        stack = [iter(self._entries(_Dir(self._root, b"", real, frozenset((real,)))))]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
            elif isinstance(item, _Dir):
                stack.append(iter(self._entries(item)))
            else:
                yield item

    def _entries(self, folder: _Dir) -> list[Found | _Dir]:
        """A folder's items and subfolders, in walk order."""
        keyed: list[tuple[bytes, Found | _Dir]] = []
        try:
            with os.scandir(folder.path) as entries:
                for entry in entries:
                    item = self._visit(entry, folder)
                    if item is not None:
                        key = entry.name + b"/" if isinstance(item, _Dir) else entry.name
                        keyed.append((key, item))
        except OSError as exc:
            log.warning("cannot list %r: %s", folder.path, exc)
        keyed.sort(key=itemgetter(0))
        return [item for _key, item in keyed]

    def _visit(self, entry: os.DirEntry[bytes], folder: _Dir) -> Found | _Dir | None:
        name = entry.name
        if name.startswith(b".") or self._exclude(os.fsdecode(name)):
            return None
        rel = folder.prefix + name
        try:
            if entry.is_symlink():
                return self._symlink(entry.path, rel, folder)
            real = folder.real + b"/" + name
            if entry.is_dir(follow_symlinks=False):
                return _Dir(entry.path, rel + b"/", real, folder.seen | {real})
            if entry.is_file(follow_symlinks=False):
                return self._file(entry.path, rel, real, entry.stat(follow_symlinks=False))
        except OSError as exc:  # vanished or unreadable while we looked
            log.debug("skipping %r: %s", entry.path, exc)
        return None

    def _symlink(self, path: bytes, rel: bytes, folder: _Dir) -> Found | _Dir | None:
        target = os.path.realpath(path)
        if not self._inside(target):
            log.debug("not following %r: it leaves the document root", path)
            return None
        st = os.stat(target)
        if stat.S_ISDIR(st.st_mode) and target not in folder.seen:
            return _Dir(path, rel + b"/", target, folder.seen | {target})
        if stat.S_ISREG(st.st_mode):
            return self._file(path, rel, target, st)
        return None

    def _inside(self, real: bytes) -> bool:
        """Whether a resolved path is in the root and not in (or at) anything hidden."""
        if not real.startswith(self._real_root + b"/"):
            return False
        inner = real[len(self._real_root) + 1 :]
        return not any(part.startswith(b".") for part in inner.split(b"/"))

    def _file(self, path: bytes, rel: bytes, real: bytes, st: os.stat_result) -> Found | None:
        if real in self._skip:
            return None
        return Found(rel, path, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
