"""``runs.jsonl``: every run that starts ends with an end line holding its exit code, a run
that fails at once too, through the ``harvester`` CLI."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from coop_common.exitcode import ExitCode
from tests.commands import harvester


def test_a_run_that_fails_at_once_writes_its_start_and_its_end(tmp_path: Path) -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}/"
    out = tmp_path / "out"
    done = harvester("harvest", url, "--out", str(out), "--quiet")
    assert done.returncode == ExitCode.FAILED, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"harvester: cannot reach {url}")
    start, end = (json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines())
    assert (start["event"], start["site"], start["mode"]) == ("start", url, "auto")
    assert (end["event"], end["run"], end["exit"]) == ("end", start["run"], ExitCode.FAILED)
