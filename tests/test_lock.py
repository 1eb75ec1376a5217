"""One harvester at a time on a collection: two real processes, one refused, then SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from coop_common.exitcode import ExitCode
from harvester.run.lock import LOCK_NAME
from tests.commands import HARVESTER
from tests.conftest import start_provider
from tests.sites import make_site


def wait_for_pid(lock: Path, proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """The pid the holder wrote into the lock file, once it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        text = lock.read_text() if lock.exists() else ""
        if text.strip().isdigit():
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"no pid in {lock} (holder exit {proc.poll()})")


def test_a_second_harvest_is_refused_until_the_holder_is_killed(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=30, seed=4)
    out = tmp_path / "out"
    argv = [HARVESTER, "harvest", "{url}", "--out", str(out), "--quiet"]
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        argv[2] = server.url
        # a polite first run holds the collection for a long while
        holder = subprocess.Popen([*argv, "--delay", "5"], stderr=subprocess.DEVNULL)
        try:
            pid = wait_for_pid(out / LOCK_NAME, holder)
            assert pid == holder.pid
            second = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            assert holder.poll() is None, "the holder ran to its end: the test proves nothing"
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait(10)
        assert second.returncode == ExitCode.USAGE
        assert second.stdout == ""
        (line,) = second.stderr.splitlines()
        assert line.startswith("harvester: ") and str(out) in line
        assert f"in use by process {holder.pid}" in line
        # the kernel released the killed holder's lock: the next run takes it and finishes
        third = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=120)
    assert third.returncode == ExitCode.OK, third.stderr
    assert '"coverage": 1.0' in third.stdout
    assert (out / LOCK_NAME).read_text().strip() != str(holder.pid)
