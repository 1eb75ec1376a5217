"""Child process: the harvester CLI whose forked fetching processes SIGKILL themselves, or
take their time.

``python -m tests.killed_fetcher N harvest URL ...`` runs ``harvester harvest URL ...``; a
process forked to fetch a share of the list kills itself (SIGKILL: no cleanup, no flush) right
after its N-th WARC group reached the disk, before the commit that marks it. The first
process, which listed the site, is never killed: it must notice, finish its own share and
fail the run. With ``slow`` for N, a forked process pauses 50 ms after each group instead;
with ``fail``, its first group raises an ArchiveError (as a full disk would).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from harvester.archive.recorder import Recorder
from harvester.cli import main
from harvester.exceptions import ArchiveError


def kill_forked_after(groups: int) -> None:
    """Make the ``groups``-th :meth:`Recorder.fetched` of any forked process its last act."""
    first = os.getpid()
    fetched = Recorder.fetched
    written = 0

    def fetched_then_die(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        nonlocal written
        result = fetched(self, *args, **kwargs)
        written += 1
        if os.getpid() != first and written >= groups:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    Recorder.fetched = fetched_then_die  # type: ignore[method-assign]


def slow_forked() -> None:
    """Make every :meth:`Recorder.fetched` of a forked process take 50 ms more."""
    first = os.getpid()
    fetched = Recorder.fetched

    def fetched_slowly(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        if os.getpid() != first:
            time.sleep(0.05)
        return fetched(self, *args, **kwargs)

    Recorder.fetched = fetched_slowly  # type: ignore[method-assign]


def failing_forked() -> None:
    """Make every :meth:`Recorder.fetched` of a forked process fail."""
    first = os.getpid()
    fetched = Recorder.fetched

    def fetched_or_fail(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        if os.getpid() != first:
            raise ArchiveError("cannot write /full/disk.warc.gz: No space left on device")
        return fetched(self, *args, **kwargs)

    Recorder.fetched = fetched_or_fail  # type: ignore[method-assign]


if __name__ == "__main__":
    if sys.argv[1] == "slow":
        slow_forked()
    elif sys.argv[1] == "fail":
        failing_forked()
    else:
        kill_forked_after(int(sys.argv[1]))
    sys.exit(main(sys.argv[2:]))
