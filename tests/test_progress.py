"""The harvest's progress: a rich bar on a terminal, log lines elsewhere, nothing when quiet."""

from __future__ import annotations

import logging
import os
import pty
import sys
from collections.abc import Iterator
from typing import TextIO

import pytest

from harvester.progress import ByteProgress, ProgressReporter
from harvester.summary import Summary


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
    caplog.set_level(logging.INFO, logger="harvester.progress")
    with ProgressReporter(interval=3600) as progress:
        assert progress._bar is None  # pytest's stderr is not a terminal
        progress(Summary(listed=4, fetched=2, bytes=10), 2)
        progress(Summary(listed=4, fetched=3, bytes=20), 1)  # within the interval: no line
    assert [r.getMessage() for r in caplog.records] == ["listed 4 fetched 2 left 2, 10 bytes"]


def test_quiet_says_nothing_even_on_a_terminal(
    terminal: TextIO, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "stderr", terminal)
    caplog.set_level(logging.INFO, logger="harvester.progress")
    with ProgressReporter(quiet=True, interval=0) as progress:
        progress(Summary(listed=1, fetched=1), 0)
        assert progress._bar is None
    assert caplog.records == []


def test_the_first_line_comes_at_once_even_just_after_boot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A monotonic clock starts near 0 at boot: the first line must not wait ``interval``."""
    caplog.set_level(logging.INFO, logger="harvester.progress")
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
        caplog.at_level(logging.INFO, "harvester.progress"),
        ByteProgress("wacz", 1000, interval=5, clock=lambda: now[0]) as progress,
    ):
        for _ in range(4):
            now[0] += 3
            progress(100)
    assert caplog.messages == ["wacz: 200 of 1000 bytes", "wacz: 400 of 1000 bytes"]


def test_quiet_bytes_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    with (
        caplog.at_level(logging.INFO, "harvester.progress"),
        ByteProgress("wacz", 10, quiet=True, clock=lambda: now[0]) as progress,
    ):
        now[0] += 60
        progress(10)
    assert caplog.messages == []
