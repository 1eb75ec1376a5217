"""The static deployment: ResourceSync documents written as files, for a site that nginx or
Apache serves alone (``oai-provider resourcesync DOCROOT --base-url URL [--out DIR]``).

Each run refreshes a file index of its own and the ledger that follows it, both in a state
folder outside the document root (``.<root>.resourcesync/`` beside it by default), closes the
run's changes into a Change List of their own, and (re)writes every document under ``out``
(the document root by default). Every file is written to a temporary name and renamed into
place, parts before the indexes that name them, so a reader never meets a half-written
document or a dangling reference; a run killed half-way is finished by the next, which
rewrites every document from the ledger. Documents written into the document root are left
out of the index (by name: ``capabilitylist.xml``, ``resourcelist*.xml``,
``changelist*.xml``; ``.well-known`` is hidden, hence never indexed).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from server_module.index.fileindex import FileIndex
from server_module.resourcesync.documents import MAX_ENTRIES
from server_module.resourcesync.publication import CAPABILITIES, SOURCE, Publication
from server_module.resourcesync.source import Source

log = logging.getLogger(__name__)
DOCUMENT_PATTERNS = (
    CAPABILITIES,
    "resourcelist.xml",
    "resourcelist-[0-9][0-9][0-9][0-9][0-9].xml",
    "changelist.xml",
    "changelist-[0-9][0-9][0-9][0-9][0-9].xml",
)
_STALE = re.compile(r"(resourcelist|changelist)-\d{5}\.xml")


@dataclass(frozen=True)
class StaticRun:
    """What one run did: the changes it added and the documents it wrote."""

    changes: int
    written: tuple[str, ...]


def default_state_dir(docroot: Path) -> Path:
    """Beside (never inside) the document root.

    >>> str(default_state_dir(Path("/srv/www/site")))
    '/srv/www/.site.resourcesync'
    """
    root = Path(os.path.abspath(docroot))
    return root.parent / f".{root.name}.resourcesync"


def publish_static(
    docroot: Path,
    base_url: str,
    *,
    out: Path | None = None,
    state: Path | None = None,
    exclude: tuple[str, ...] = (),
    allow_outside: tuple[Path, ...] = (),
    max_entries: int = MAX_ENTRIES,
) -> StaticRun:
    """One run: refresh, close the run's Change List, write every document under ``out``."""
    out = out or docroot
    state = state or default_state_dir(docroot)
    state.mkdir(parents=True, exist_ok=True)
    if _inside(out, docroot):
        exclude = (*exclude, *DOCUMENT_PATTERNS)
    index = FileIndex(
        state / "index.sqlite", docroot, base_url, exclude=exclude, allow_outside=allow_outside
    )
    with index:
        index.refresh()
        source = Source(index, state / "ledger.sqlite", max_entries=max_entries).open()
        changes = source.sync(close_run=True)
        with source.publication() as publication:
            written = _write_all(publication, out)
    log.info("%d changes; wrote %d documents under %s", changes, len(written), out)
    return StaticRun(changes, written)


def _write_all(publication: Publication, out: Path) -> tuple[str, ...]:
    """Parts first, then the lists, the Capability List, and the Source Description last."""
    names = list(publication.names())
    first = [n for n in names if _STALE.fullmatch(n)]
    order = first + [n for n in names if n not in first and n not in (CAPABILITIES, SOURCE)]
    order += [CAPABILITIES, SOURCE]
    for name in order:
        body = publication.document(name)
        if body is not None:
            _write(out / name, body)
    _remove_stale(out, set(names))
    return tuple(order)


def _write(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(body)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def _remove_stale(out: Path, current: set[str]) -> None:
    """Parts a list no longer has (it shrank back to one document)."""
    for path in out.iterdir():
        if _STALE.fullmatch(path.name) and path.name not in current:
            path.unlink()


def _inside(path: Path, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
