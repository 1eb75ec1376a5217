"""Child process: the harvester CLI, SIGKILLed at a precise point of a crawl.

``python -m tests.killed_harvester N harvest URL ...`` runs ``harvester harvest URL ...`` and
kills itself (SIGKILL: no cleanup, no flush) right after the N-th crawled page's WARC group
reached the disk, before the state transaction that records the page and queues its links.
That is the narrowest window a crash can hit: the archive knows the page, the state does not.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from harvester.archive.recorder import Recorder
from harvester.cli import main


def kill_after(groups: int) -> None:
    """Make the ``groups``-th :meth:`Recorder.fetched` the process's last act."""
    fetched = Recorder.fetched
    written = 0

    def fetched_then_die(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        nonlocal written
        result = fetched(self, *args, **kwargs)
        written += 1
        if written >= groups:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    Recorder.fetched = fetched_then_die  # type: ignore[method-assign]


if __name__ == "__main__":
    kill_after(int(sys.argv[1]))
    sys.exit(main(sys.argv[2:]))
