"""Runs the plugins over a refresh's new and changed files, in parallel within a CPU budget.

The work is cut into units, one plugin over a batch of files (a single file for a custom
command), run by ``workers`` threads, each waiting on one child process: at most ``workers``
tools run at once. Whatever a tool does (fails, hangs, floods its output) becomes that file's
:class:`~coop_common.analysis.Analysis`, never an exception; a batch that did not end
well is run again one file at a time. A file whose size or mtime changed while it was being
analysed gets no result, so the next refresh, which hashes it again, analyses its new bytes.
Outputs have the document root's path taken out: they describe the file, not the disk.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from coop_common.analysis import Analysis
from server_module.plugins import child
from server_module.plugins.spec import Plugin

log = logging.getLogger(__name__)


def default_workers() -> int:
    """Half the cores, at least one: a refresh leaves the other half to serving."""
    return max(1, (os.cpu_count() or 2) // 2)


@dataclass(frozen=True, slots=True)
class Subject:
    """A file version to analyse: its digest, its path, its MIME type and the stat it was
    hashed with (size, mtime_ns)."""

    sha256: str
    path: bytes
    mime: str
    size: int
    mtime_ns: int


class PluginRunner:
    """Runs ``plugins`` on files; ``runs`` counts the files each plugin analysed, ``seconds``
    the time its tool took (summed over the threads)."""

    def __init__(
        self,
        plugins: Sequence[Plugin],
        *,
        limits: child.Limits,
        workers: int = 0,
        docroot: bytes = b"",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.plugins = tuple(plugins)
        self.limits = limits
        self.workers = workers or default_workers()
        self.docroot = docroot.rstrip(b"/") + b"/" if docroot else b""
        self.clock = clock
        self.runs: Counter[str] = Counter()
        self.seconds: dict[str, float] = defaultdict(float)

    def __bool__(self) -> bool:
        return bool(self.plugins)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(p.label for p in self.plugins)

    def plugin(self, label: str) -> Plugin | None:
        return next((p for p in self.plugins if p.label == label), None)

    def analyse(self, work: Sequence[tuple[Plugin, Sequence[Subject]]]) -> list[Analysis]:
        """Each plugin over its files; the results of the files that stayed as hashed."""
        units = [
            (plugin, subjects[i : i + plugin.batch])
            for plugin, subjects in work
            for i in range(0, len(subjects), plugin.batch)
        ]
        if not units:
            return []
        with ThreadPoolExecutor(self.workers, thread_name_prefix="plugin") as pool:
            done = list(pool.map(self._unit, units))
        return [a for results in done for a in results]

    # -- one unit -------------------------------------------------------------------------

    def _unit(self, unit: tuple[Plugin, Sequence[Subject]]) -> list[Analysis]:
        plugin, subjects = unit
        started = time.monotonic()
        try:
            found = self._batch(plugin, subjects) if len(subjects) > 1 else None
            if found is None:
                found = [self._single(plugin, s) for s in subjects]
        except Exception:  # a bug here must not stop the refresh: the files get no result
            log.exception("plugin %s failed on %d file(s)", plugin.label, len(subjects))
            return []
        self.runs[plugin.label] += len(subjects)
        self.seconds[plugin.label] += time.monotonic() - started
        return [a for a, s in zip(found, subjects, strict=True) if _unchanged(s)]

    def _batch(self, plugin: Plugin, subjects: Sequence[Subject]) -> list[Analysis] | None:
        """One run for every file; None when it did not end well or its output would not
        split, so that each file is run alone."""
        ran_at, limits = int(self.clock()), self._limits(plugin)
        parts: list[list[bytes]] = [[] for _ in subjects]
        seconds = 0.0
        paths = [s.path for s in subjects]
        for argv, split in zip(plugin.argvs, plugin.split, strict=True):
            outcome = child.run(plugin.command(argv, paths), limits)
            seconds += outcome.seconds
            if outcome.status != "ok":
                return None
            pieces = split(outcome.stdout, len(subjects))
            if any(p is None for p in pieces):
                return None
            for part, piece in zip(parts, pieces, strict=True):
                part.append(piece or b"")
        share = seconds / len(subjects)
        return [
            self._analysis(plugin, s, ran_at, "ok", 0, b"\n".join(p), share)
            for s, p in zip(subjects, parts, strict=True)
        ]

    def _single(self, plugin: Plugin, subject: Subject) -> Analysis:
        ran_at, limits = int(self.clock()), self._limits(plugin)
        outputs: list[bytes] = []
        seconds = 0.0
        for argv, split in zip(plugin.argvs, plugin.split, strict=True):
            outcome = child.run(plugin.command(argv, [subject.path]), limits)
            seconds += outcome.seconds
            if outcome.status != "ok":
                output = b"\n".join([*outputs, outcome.stdout, outcome.stderr]).strip()
                return self._analysis(
                    plugin, subject, ran_at, outcome.status, outcome.exit_code, output, seconds
                )
            (piece,) = split(outcome.stdout, 1)
            outputs.append(outcome.stdout if piece is None else piece)
        return self._analysis(plugin, subject, ran_at, "ok", 0, b"\n".join(outputs), seconds)

    def _limits(self, plugin: Plugin) -> child.Limits:
        return child.Limits(plugin.timeout, self.limits.memory_bytes, self.limits.output_bytes)

    def _analysis(
        self,
        plugin: Plugin,
        subject: Subject,
        ran_at: int,
        status: str,
        code: int | None,
        output: bytes,
        seconds: float,
    ) -> Analysis:
        if self.docroot:
            output = output.replace(self.docroot, b"")
        facts = plugin.facts(output) if status == "ok" else {}
        return Analysis(
            subject.sha256,
            plugin.label,
            plugin.tool,
            plugin.tool_version,
            ran_at,
            status,
            code,
            output,
            round(seconds, 6),
            facts,
        )


def _unchanged(subject: Subject) -> bool:
    try:
        st = os.stat(subject.path)
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == (subject.size, subject.mtime_ns)
