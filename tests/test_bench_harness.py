"""The benchmark harness: reports render, contenders alternate, the runner finds benchmarks."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.harness import Report, alternate


def test_report_table_and_json() -> None:
    report = Report("demo", ["who", "rate"], [["ours", 2500.0], ["peer", 1000.0]])
    report.figures["ratio"] = 2.5
    assert report.table().splitlines()[2] == "| ours | 2,500 |"
    assert json.loads(report.json_line()) == {"bench": "demo", "ratio": 2.5}


def test_alternate_interleaves() -> None:
    order: list[str] = []
    times = alternate({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeats=3)
    assert order == ["a", "b"] * 3
    assert all(len(v) == 3 and min(v) >= 0 for v in times.values())


def test_runner_rejects_unknown_name() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "no-such-bench"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "unknown benchmark" in proc.stdout
