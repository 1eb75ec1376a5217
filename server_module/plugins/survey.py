"""What the plugins still have to analyse: each present file version (by SHA-256 digest)
without a result from each plugin that applies to its MIME type.

A refresh commits its rows first and leaves the analyses to
:mod:`server_module.index.analyser`. A refresh that adds or changes files clears the
``plugin_labels`` entry of the index's ``meta`` table; an analysis pass that finds nothing
left sets it to the plugin set, so that later passes know at once that nothing is due. An
index made before plugins existed, a pass cut short (the process killed), or a plugin added
to the settings all leave it different from the plugin set: the next pass looks at every
file, and analyses those still missing a result, each once.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from server_module.index.schema import meta
from server_module.plugins import store
from server_module.plugins.runner import PluginRunner, Subject
from server_module.plugins.spec import Plugin

Work = list[tuple[Plugin, list[Subject]]]


@dataclass(frozen=True, slots=True)
class Due:
    """A file version and the plugins it still lacks a result from."""

    subject: Subject
    plugins: tuple[Plugin, ...]


def labels_key(runner: PluginRunner) -> str:
    return json.dumps(sorted(runner.labels))


def complete(conn: sqlite3.Connection, runner: PluginRunner) -> bool:
    """Whether the last pass found nothing due under this plugin set and no file came since."""
    return meta(conn, "plugin_labels") == labels_key(runner)


def pending(
    conn: sqlite3.Connection,
    runner: PluginRunner,
    docroot: bytes,
    tried: Collection[tuple[str, str]] = (),
) -> list[Due]:
    """Each file version a plugin applies to and has no result for, but for the (digest,
    label) pairs in ``tried`` (run already in this pass: a file that changed under its tool
    gets no result, and is hashed and analysed again by a later refresh)."""
    due: dict[str, tuple[Subject, list[Plugin]]] = {}
    for plugin in runner.plugins:
        for rel, sha, mime, size, mtime in store.unanalysed(conn, plugin.label):
            if (sha, plugin.label) in tried or not plugin.applies_to(mime):
                continue
            path = os.path.join(docroot, rel)
            plugins = due.setdefault(sha, (Subject(sha, path, mime, size, mtime), []))[1]
            if not plugins or plugins[-1] is not plugin:  # a copy: the same version again
                plugins.append(plugin)
    return [Due(subject, tuple(plugins)) for subject, plugins in due.values()]


def work(batch: Sequence[Due]) -> Work:
    """``batch`` as the runner takes it: each plugin with its files."""
    by_plugin: dict[str, tuple[Plugin, list[Subject]]] = {}
    for due in batch:
        for plugin in due.plugins:
            by_plugin.setdefault(plugin.label, (plugin, []))[1].append(due.subject)
    return list(by_plugin.values())
