"""The benchmark report and the side-by-side timing helpers every benchmark uses."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Report:
    """One benchmark's outcome: a table for people and headline figures for machines."""

    name: str
    columns: list[str]
    rows: list[list[object]] = field(default_factory=list)
    figures: dict[str, float | int | str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        """The rows as a Markdown table, ready for bench/README.md."""
        cells = [[_fmt(c) for c in row] for row in self.rows]
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines)

    def json_line(self) -> str:
        return json.dumps({"bench": self.name, **self.figures}, sort_keys=True)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def timed(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(
    contenders: dict[str, Callable[[], object]], repeats: int = 3
) -> dict[str, list[float]]:
    """Run each contender ``repeats`` times, interleaved (A B A B ...), and keep every time."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            times[name].append(timed(fn))
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)
