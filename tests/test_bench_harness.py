"""The benchmark harness: reports render, contenders alternate, the runner finds benchmarks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.harness import Report, alternate, run_child


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


def test_run_child_reports_the_commands_own_peak_rss_and_cpu(tmp_path: Path) -> None:
    """Linux carries a process's peak RSS across exec: a command started straight from a big
    benchmark process reported the benchmark's RSS as its own (66 MB for wget)."""
    ballast = bytearray(300 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # resident, not just reserved
    script = "x = bytearray(40 << 20); x[::4096] = b'1' * len(x[::4096]); sum(range(10**6))"
    run = run_child(
        [sys.executable, "-S", "-c", script], tmp_path / "a.out", tmp_path / "a.err",
        timeout=60, cwd=tmp_path,
    )  # fmt: skip
    peak_mb = run.usage.ru_maxrss / 1024
    assert 40 <= peak_mb < 100, peak_mb
    assert 0 < run.usage.ru_utime < 5 and 0 < run.seconds < 30
    assert len(ballast) == 300 * 1024 * 1024


def test_run_child_passes_exit_codes_and_kills_on_timeout(tmp_path: Path) -> None:
    fails = [sys.executable, "-S", "-c", "raise SystemExit(8)"]
    assert run_child(fails, tmp_path / "b.out", tmp_path / "b.err", timeout=60, cwd=tmp_path,
                     ok=(0, 8)).usage.ru_maxrss > 0  # fmt: skip
    with pytest.raises(RuntimeError, match="exited with 3"):
        run_child([sys.executable, "-S", "-c", "raise SystemExit(3)"], tmp_path / "c.out",
                  tmp_path / "c.err", timeout=60, cwd=tmp_path)  # fmt: skip
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="exited with -9"):
        run_child(["sleep", "30"], tmp_path / "d.out", tmp_path / "d.err", timeout=0.5,
                  cwd=tmp_path)  # fmt: skip
    assert time.monotonic() - started < 10
