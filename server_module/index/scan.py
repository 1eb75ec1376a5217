"""The folder scan: which files under the document root are items, as the site serves them.

The scan walks the tree with bytes paths throughout (names that are not UTF-8 work) and skips
what a web server would not serve or what is not the site's content:

* hidden names (starting with ``.``), at any depth;
* names matching an exclude pattern (``fnmatch`` globs, editor backups by default);
* symlinks whose target is not public by :mod:`server_module.index.publicpaths`: it leaves the
  document root for a folder not allowed with ``allow_outside``, or passes through anything
  hidden or excluded. Those that leave the root are kept in :attr:`Scanner.outside`, so the
  operator can be told. A symlinked folder is followed unless it loops back to a folder above
  it;
* anything that is neither a regular file nor a folder (fifos, devices, sockets);
* the index's own files, should the index live inside the document root.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from server_module.index.filemeta import Stat
from server_module.index.publicpaths import DEFAULT_EXCLUDES, PublicPaths

__all__ = ["DEFAULT_EXCLUDES", "Found", "OutsideLink", "Scanner"]

log = logging.getLogger(__name__)


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


class OutsideLink(NamedTuple):
    """A symlink the scan did not follow because its target leaves the document root."""

    relpath: bytes
    target: bytes  # its real path


class Scanner:
    """Walks the document root as the site serves it, with bytes paths throughout."""

    def __init__(
        self,
        docroot: bytes,
        exclude: Sequence[str],
        skip: frozenset[bytes],
        allow_outside: Iterable[str | bytes | os.PathLike[str]] = (),
    ) -> None:
        self._root = docroot
        self._rules = PublicPaths(docroot, exclude, allow_outside)
        self._skip = skip
        self.outside: list[OutsideLink] = []  # filled as the walk goes, in walk order

    def walk(self) -> Iterator[Found]:
        """Every file that is an item, in byte order of relative path: the index's order, so a
        refresh can merge the two without holding either in memory.

        Each folder's entry names are sorted with a folder's name followed by ``/``, which puts
        ``a-b`` before everything under ``a/``, as byte order of the whole paths does. Only the
        names of one folder per level of depth are held (about 100 bytes each); each entry is
        looked at when the walk reaches it.
        """
        # A missing or unreadable root (an unmounted disk) must fail the refresh, not read as
        # "every file was deleted".
        os.scandir(self._root).close()
        real = self._rules.root
        root = _Dir(self._root, b"", real, frozenset((real,)))
        stack = [(root, iter(self._listing(root)))]
        while stack:
            folder, keys = stack[-1]
            key = next(keys, None)
            if key is None:
                stack.pop()
                continue
            item = self._visit(folder, key)
            if isinstance(item, _Dir):
                stack.append((item, iter(self._listing(item))))
            elif item is not None:
                yield item

    def _listing(self, folder: _Dir) -> list[bytes]:
        """The names to visit in a folder, in walk order; a folder's (or a link to one's)
        with ``/`` appended."""
        keys: list[bytes] = []
        try:
            with os.scandir(folder.path) as entries:
                for entry in entries:
                    name = entry.name
                    if not self._rules.name_ok(name):
                        continue
                    keys.append(name + b"/" if _is_dir(entry) else name)
        except OSError as exc:
            log.warning("cannot list %r: %s", folder.path, exc)
        keys.sort()
        return keys

    def _visit(self, folder: _Dir, key: bytes) -> Found | _Dir | None:
        listed_dir = key.endswith(b"/")
        name = key[:-1] if listed_dir else key
        path, rel = os.path.join(folder.path, name), folder.prefix + name
        try:
            st = os.lstat(path)
            item: Found | _Dir | None = None
            if stat.S_ISLNK(st.st_mode):
                item = self._symlink(path, rel, folder)
            elif stat.S_ISDIR(st.st_mode):
                real = folder.real + b"/" + name
                item = _Dir(path, rel + b"/", real, folder.seen | {real})
            elif stat.S_ISREG(st.st_mode):
                item = self._file(path, rel, folder.real + b"/" + name, st)
        except OSError as exc:  # vanished or unreadable since the listing
            log.debug("skipping %r: %s", path, exc)
            return None
        if item is not None and isinstance(item, _Dir) != listed_dir:
            return None  # a file became a folder or back since the listing: next refresh
        return item

    def _symlink(self, path: bytes, rel: bytes, folder: _Dir) -> Found | _Dir | None:
        target = os.path.realpath(path)
        if self._rules.base_of(target) is None:
            if self._rules.folder_of(target) is None:
                self.outside.append(OutsideLink(rel, target))
            log.debug("not following %r: its target %r is not public", path, target)
            return None
        st = os.stat(target)
        if stat.S_ISDIR(st.st_mode) and target not in folder.seen:
            return _Dir(path, rel + b"/", target, folder.seen | {target})
        if stat.S_ISREG(st.st_mode):
            return self._file(path, rel, target, st)
        return None

    def _file(self, path: bytes, rel: bytes, real: bytes, st: os.stat_result) -> Found | None:
        if real in self._skip:
            return None
        return Found(rel, path, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))


def _is_dir(entry: os.DirEntry[bytes]) -> bool:
    """Whether an entry is a folder, following a symlink (a link to a folder sorts as one)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def outside_report(links: Sequence[OutsideLink], limit: int = 50) -> str:
    """What to tell the operator of the links the scan did not follow out of the root, with
    the flag that publishes them; empty when there are none."""
    if not links:
        return ""
    many = len(links) != 1
    lines = [
        f"{len(links)} symlink{'s lead' if many else ' leads'} outside the document root and "
        f"{'are' if many else 'is'} not published (publish a folder with --allow-outside PATH):"
    ]
    lines += [f"  {_shown(link.relpath)} -> {_shown(link.target)}" for link in links[:limit]]
    if len(links) > limit:
        lines.append(f"  … and {len(links) - limit} more")
    return "\n".join(lines)


def _shown(path: bytes) -> str:
    return path.decode("utf-8", "backslashreplace")
