"""The harvest's progress: a rich bar on a terminal, log lines elsewhere, nothing when quiet."""

from __future__ import annotations

import logging
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from harvester.run.progress import ByteProgress, ProgressReporter
from harvester.summary import Summary
from tests.servers import serve_pages
from tests.test_crawl import PAGES


@pytest.fixture
def terminal() -> Iterator[TextIO]:
    """The slave side of a real pseudo-terminal. A test sets it as ``sys.stderr`` itself:
    pytest's output capture sets ``sys.stderr`` again between a fixture and the test."""
    master, slave = pty.openpty()
    with open(slave, "w", encoding="utf-8") as tty:
        yield tty
    os.close(master)


def test_a_terminal_gets_a_bar_that_follows_the_counts(
    terminal: TextIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stderr", terminal)
    with ProgressReporter() as progress:
        progress(Summary(listed=10, fetched=3, unchanged=1, failed=1, bytes=5000), 5)
        assert progress._bar is not None
        (task,) = progress._bar.tasks
        assert (task.completed, task.total) == (5, 10)
        assert task.fields["status"] == "listed 10"
        assert "res/s" in task.fields["rate"]
        assert progress._bar.live.is_started
    assert not progress._bar.live.is_started


def test_elsewhere_a_log_line_every_interval(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="harvester.run.progress")
    with ProgressReporter(interval=3600) as progress:
        assert progress._bar is None  # pytest's stderr is not a terminal
        progress(Summary(listed=4, fetched=2, bytes=10), 2)
        progress(Summary(listed=4, fetched=3, bytes=20), 1)  # within the interval: no line
    assert [r.getMessage() for r in caplog.records] == ["listed 4 fetched 2 left 2, 10 bytes"]


def test_a_crawl_counts_its_queue_not_a_list(caplog: pytest.LogCaptureFixture) -> None:
    """A crawl lists nothing: its line said "listed 0" before."""
    caplog.set_level(logging.INFO, logger="harvester.run.progress")
    with ProgressReporter(interval=3600) as progress:
        progress(Summary(mode="crawl", fetched=2, bytes=10), 7)
    assert caplog.messages == ["crawled 2 queued 7, 10 bytes"]


def test_quiet_says_nothing_even_on_a_terminal(
    terminal: TextIO, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "stderr", terminal)
    caplog.set_level(logging.INFO, logger="harvester.run.progress")
    with ProgressReporter(quiet=True, interval=0) as progress:
        progress(Summary(listed=1, fetched=1), 0)
        assert progress._bar is None
    assert caplog.records == []


def test_the_first_line_comes_at_once_even_just_after_boot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A monotonic clock starts near 0 at boot: the first line must not wait ``interval``."""
    caplog.set_level(logging.INFO, logger="harvester.run.progress")
    now = [0.5]  # half a second after boot
    with ProgressReporter(interval=5.0, clock=lambda: now[0]) as progress:
        progress(Summary(listed=2, fetched=1, bytes=7), 1)
        now[0] = 3.0  # within the interval of the first line
        progress(Summary(listed=2, fetched=2, bytes=9), 0)
        now[0] = 5.6
        progress(Summary(listed=2, fetched=2, bytes=9), 0)
    assert [r.getMessage() for r in caplog.records] == [
        "listed 2 fetched 1 left 1, 7 bytes",
        "listed 2 fetched 2 left 0, 9 bytes",
    ]


# -- verify and wacz: progress through a known number of bytes --------------------------


def test_bytes_get_a_bar_on_a_terminal(terminal: TextIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", terminal)
    with ByteProgress("verify", 1000) as progress:
        progress(300)
        progress(200)
        assert progress._bar is not None
        (task,) = progress._bar.tasks
        assert (task.completed, task.total) == (500, 1000)
    assert not progress._bar.live.is_started


def test_bytes_get_a_log_line_per_interval_elsewhere(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    with (
        caplog.at_level(logging.INFO, "harvester.run.progress"),
        ByteProgress("wacz", 1000, interval=5, clock=lambda: now[0]) as progress,
    ):
        for _ in range(4):
            now[0] += 3
            progress(100)
    assert caplog.messages == ["wacz: 200 of 1000 bytes", "wacz: 400 of 1000 bytes"]


def test_quiet_bytes_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    with (
        caplog.at_level(logging.INFO, "harvester.run.progress"),
        ByteProgress("wacz", 10, quiet=True, clock=lambda: now[0]) as progress,
    ):
        now[0] += 60
        progress(10)
    assert caplog.messages == []


# -- a run on a terminal: the bar and the log lines share it ----------------------------

_CONTROL = re.compile(r"(\r|\n|\x1b\[[0-9;?]*[A-Za-z])")


def _screen(output: str) -> list[str]:
    """The lines a terminal shows after ``output``: line feeds, carriage returns, ``ESC [nA``
    (up n lines) and ``ESC [2K`` (erase the line) move and erase, text overwrites; other
    control sequences show nothing."""
    lines: list[list[str]] = [[]]
    row = column = 0
    for part in _CONTROL.split(output):
        if part == "\n":
            row += 1
            lines += [[] for _ in range(row + 1 - len(lines))]
        elif part == "\r":
            column = 0
        elif part == "\x1b[2K":
            lines[row] = []
        elif part.startswith("\x1b[") and part.endswith("A"):
            row = max(0, row - int(part[2:-1] or 1))
        elif not part.startswith("\x1b["):
            cells = lines[row] + [" "] * (column - len(lines[row]))
            cells[column : column + len(part)] = part
            lines[row], column = cells, column + len(part)
    return ["".join(cells).rstrip() for cells in lines]


def _on_a_terminal(argv: list[str], timeout: float = 60.0) -> str:
    """Run ``argv`` with its stdout and stderr on a new pseudo-terminal; all it wrote."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "COLUMNS": "100"},
    )
    os.close(slave)
    output, deadline = bytearray(), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer has closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
        process.wait(10)
    return output.decode("utf-8", "replace")


def test_log_lines_on_a_terminal_take_a_line_of_their_own(tmp_path: Path) -> None:
    """A crawl on a terminal draws a bar while both its processes log: each log line shows
    on a line of its own, from its time stamp on. They were glued to the end of the bar."""
    with serve_pages(PAGES) as server:
        harvest = [sys.executable, "-m", "harvester.cli", "harvest", server.url + "/"]
        out = ["--out", str(tmp_path / "out")]
        output = _on_a_terminal([*harvest, *out, "--mode", "crawl", "--delay", "0"])
    shown = _screen(output)
    logged = [line for line in shown if " INFO " in line]
    assert any("harvester.crawl.crawler" in line for line in logged), shown
    assert any("harvester.archive.warc: started" in line for line in logged), shown
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO ", ln) for ln in logged), shown
    assert any(line.startswith("fetched=3") for line in shown), shown
    assert not any("crawling" in line for line in shown), "the bar is gone at the end"
