"""The public-path rules: which paths of a document root the site publishes.

One set of rules for the scan (what becomes an item, :mod:`server_module.index.scan`) and for every
open (what is served, :mod:`server_module.files.docroot`), so the two cannot disagree:

* every component of the path as reached from the root is a plain name: not empty, not hidden
  (starting with ``.``), not matching an exclude pattern (``fnmatch`` globs, editor backups by
  default);
* its real path (symlinks resolved) lies inside the document root, or inside a folder the
  operator allowed (``allow_outside``), and the part of it below that folder passes the same
  name rules.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

DEFAULT_EXCLUDES: tuple[str, ...] = ("*~", "*.swp", "*.swo", "#*#")


class PublicPaths:
    """The rules for one document root, its exclude patterns and its allowed outside folders.

    The real paths of the root and of the allowed folders are resolved once, when built.
    """

    def __init__(
        self,
        docroot: str | bytes | os.PathLike[str],
        exclude: Sequence[str] = DEFAULT_EXCLUDES,
        allow_outside: Iterable[str | bytes | os.PathLike[str]] = (),
    ) -> None:
        self.root = os.path.realpath(os.fsencode(docroot))
        pattern = "|".join(f"(?:{fnmatch.translate(p)})" for p in exclude) or "(?!)"
        self._exclude = re.compile(pattern, re.DOTALL).match
        self.allowed = tuple(os.path.realpath(os.fsencode(p)) for p in allow_outside)

    def name_ok(self, name: bytes) -> bool:
        """Whether one path component is published: not empty, hidden or excluded.

        >>> rules = PublicPaths("/")
        >>> [rules.name_ok(n) for n in (b"a.html", b".git", b"a.html~", b"", b"..")]
        [True, False, False, False, False]
        """
        return bool(name) and not name.startswith(b".") and not self._exclude(os.fsdecode(name))

    def relpath_ok(self, relpath: bytes) -> bool:
        """Whether a relative path, as reached from the root, has only published components.

        >>> rules = PublicPaths("/")
        >>> [rules.relpath_ok(p) for p in (b"a/b.html", b"a/.git/x", b"../x", b"/etc", b"a\\x00")]
        [True, False, False, False, False]
        """
        if b"\x00" in relpath or b"\\" in relpath:
            return False
        return all(self.name_ok(part) for part in relpath.split(b"/"))

    def base_of(self, real: bytes) -> bytes | None:
        """The folder a real path is published under (:meth:`folder_of`), when the part below
        it passes the name rules; None when it is not published."""
        base = self.folder_of(real)
        if base is None or not self.relpath_ok(real[len(base) :].lstrip(b"/")):
            return None
        return base

    def folder_of(self, real: bytes) -> bytes | None:
        """The first of the root and the allowed folders that a real path lies below, or None."""
        return next((base for base in (self.root, *self.allowed) if below(base, real)), None)


def below(base: bytes, real: bytes) -> bytes | None:
    """The part of ``real`` below the folder ``base``, or None if it is not below it.

    >>> below(b"/srv/www", b"/srv/www/a/b"), below(b"/srv/www", b"/srv/www2/a"), below(b"/", b"/a")
    (b'a/b', None, b'a')
    """
    prefix = base if base.endswith(b"/") else base + b"/"
    return real[len(prefix) :] if real.startswith(prefix) and len(real) > len(prefix) else None


@lru_cache(maxsize=16)
def public_paths(
    docroot: str | os.PathLike[str],
    exclude: tuple[str, ...],
    allow_outside: tuple[str | os.PathLike[str], ...],
) -> PublicPaths:
    """The rules for these settings, built once per process (the folders do not move)."""
    return PublicPaths(docroot, exclude, allow_outside)
