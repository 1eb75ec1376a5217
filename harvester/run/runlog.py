"""The collection's run log (``DIR/runs.jsonl``): when each harvest ran, how, and what it found.

One JSON object a line, appended: a ``start`` line when a run begins, an ``end`` line when it
ends, with its counts and its exit code (``exit``), failed runs included, and its ``mode`` when
the run found it only on the way (an endpoint whose identifiers are no URLs is harvested in
``records`` mode). A run killed before its end keeps only its start line until a command that
reads the collection finds it (:mod:`harvester.collection.interruption`) and appends an end line
marked
``interrupted`` with no exit code; until then ``harvester status`` shows it as unfinished.
Each line is written with one ``write`` to a file opened for appending, so a killed writer
leaves at most a torn last line, which readers skip. It is a log for people (``status``,
``report``), never read by a harvest.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
RUNS_FILE = "runs.jsonl"


@dataclass
class Run:
    """One run: ``end`` and ``counts`` stay empty when it never finished."""

    run: str
    start: str
    mode: str
    site: str
    endpoint: str | None = None
    end: str | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    exit: int | None = None
    interrupted: bool = False


class RunLog:
    """The run log of the collection in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / RUNS_FILE

    def started(self, site: str, mode: str, endpoint: str | None) -> str:
        """Note a run's start, now; return its id, for :meth:`finished`."""
        run_id = uuid.uuid4().hex[:12]
        line = {"run": run_id, "event": "start", "at": _now(), "site": site, "mode": mode}
        self._append({**line, "endpoint": endpoint})
        return run_id

    def finished(
        self, run_id: str, counts: Mapping[str, Any], exit_code: int, mode: str | None = None
    ) -> None:
        """Note the end of run ``run_id``, now, with its summary's counts and exit code, and
        its mode when it differs from the one its start line says."""
        line = {"run": run_id, "event": "end", "at": _now(), "counts": dict(counts)}
        self._append({**line, "exit": int(exit_code), **({"mode": mode} if mode else {})})

    def interrupted(self, run_id: str) -> None:
        """Note that run ``run_id`` ended without writing its end line (it was killed)."""
        line = {"run": run_id, "event": "end", "at": _now(), "counts": {}}
        self._append({**line, "exit": None, "interrupted": True})

    def runs(self) -> list[Run]:
        """Every run in the order they started; torn or foreign lines are skipped."""
        runs: dict[str, Run] = {}
        for entry in self._entries():
            run_id, at = str(entry.get("run", "")), str(entry.get("at", ""))
            if entry.get("event") == "start":
                runs[run_id] = Run(
                    run_id,
                    at,
                    str(entry.get("mode")),
                    str(entry.get("site")),
                    entry.get("endpoint"),
                )
            elif entry.get("event") == "end" and run_id in runs:
                run = runs[run_id]
                run.end = at
                run.counts = dict(entry.get("counts") or {})
                run.mode = str(entry.get("mode") or run.mode)
                code = entry.get("exit")
                run.exit = code if isinstance(code, int) else None
                run.interrupted = bool(entry.get("interrupted"))
        return list(runs.values())

    def _entries(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        entries = []
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def _append(self, entry: Mapping[str, Any]) -> None:
        data = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:  # a log for people: the harvest goes on without it
            log.warning("cannot write the run log %s: %s", self.path, exc)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
