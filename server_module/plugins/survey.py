"""What a refresh has the plugins analyse: each plugin's files without a result for their
current version, and the results, gathered before the refresh's write transaction opens.

A refresh's new and changed files are analysed unless a copy of the same bytes has been
(results are kept by digest). Files the index already held are looked at only when the set
of plugins differs from the one the index last completed a survey with (an index made before
plugins existed, or a plugin added to the settings): each then gets its missing results once,
and its datestamp moves on (its record changed), so that an incremental harvest sees it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from coop_common.analysis import Analysis
from server_module.index.schema import meta
from server_module.plugins import store
from server_module.plugins.runner import PluginRunner, Subject
from server_module.plugins.spec import Plugin

Row = tuple[bytes, str, str, int, int]  # relpath, sha256, mime, size, mtime_ns


@dataclass
class Survey:
    """The results to keep, the present files they restamp, and the plugin set to record."""

    analyses: list[Analysis] = field(default_factory=list)
    restamp: list[bytes] = field(default_factory=list)  # unchanged files analysed: relpaths
    labels: str | None = None  # the plugin set, when this survey looked at every file

    def __bool__(self) -> bool:
        return bool(self.analyses or self.labels is not None)


def labels_key(runner: PluginRunner) -> str:
    return json.dumps(sorted(runner.labels))


def survey(
    conn: sqlite3.Connection,
    runner: PluginRunner,
    docroot: bytes,
    upserts: Sequence[tuple[object, ...]],
    deletions: Sequence[bytes],
) -> Survey:
    """Run ``runner``'s plugins where a result is missing (see the module docstring)."""
    found = Survey()
    fresh: list[Row] = [
        (r[0], r[7], r[8], r[2], r[3])  # type: ignore[misc]
        for r in upserts
    ]
    key = labels_key(runner)
    whole = meta(conn, "plugin_labels") != key
    skip = {r[0] for r in fresh} | set(deletions)
    old: dict[str, set[bytes]] = {}
    work: list[tuple[Plugin, list[Subject]]] = []
    for plugin in runner.plugins:
        subjects: dict[str, Subject] = {}
        for rel, sha, mime, size, mtime in fresh:
            if (
                sha not in subjects
                and plugin.applies_to(mime)
                and not store.analysed(conn, sha, plugin.label)
            ):
                subjects[sha] = _subject(docroot, rel, sha, mime, size, mtime)
        if whole:
            for rel, sha, mime, size, mtime in store.unanalysed(conn, plugin.label):
                if rel not in skip and plugin.applies_to(mime):
                    subjects.setdefault(sha, _subject(docroot, rel, sha, mime, size, mtime))
                    old.setdefault(sha, set()).add(rel)
        work.append((plugin, list(subjects.values())))
    found.analyses = runner.analyse(work)
    done = {a.sha256 for a in found.analyses}
    found.restamp = sorted(rel for sha in old.keys() & done for rel in old[sha])
    found.labels = key if whole else None
    return found


def _subject(docroot: bytes, rel: bytes, sha: str, mime: str, size: int, mtime: int) -> Subject:
    return Subject(sha, os.path.join(docroot, rel), mime, size, mtime)
