"""Child process: the harvester CLI, SIGKILLed (or slowed, or failing) at a precise point.

``python -m tests.killed_harvester N harvest URL ...`` runs ``harvester harvest URL ...`` and
kills itself (SIGKILL: no cleanup, no flush) right after the N-th resource's WARC group
reached the disk, before the state transaction that records it (for a crawl, before the
page's links are queued; when the crawl's archiving process wrote the group, it kills the
crawling process, then itself). That is the narrowest window a crash can hit: the archive
knows the resource, the state does not.

The other first arguments act in the processes the run forks to fetch a share of a list
(``--fetch-processes``) and never in the first one, which must notice and fail the run:
``forked:N`` kills such a process after its N-th group; ``forked:slow`` makes each of its
groups take 50 ms more; ``forked:fail`` makes its first group raise an ArchiveError, as a
full disk would. ``follower:N``, ``follower:slow`` and ``follower:fail`` act the same in the
thread that fetches while the list is read (:mod:`harvester.listed.follower`) and nowhere else.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from harvester.archive.recorder import Recorder
from harvester.cli import main
from harvester.exceptions import ArchiveError


def on_fetched(act: Callable[[int], None], *, where: str = "", before: bool = False) -> None:
    """Call ``act(n)`` just after (or ``before``) the n-th :meth:`Recorder.fetched` of this
    process; ``where`` "forked": only in a process forked from this one; "follower": only in
    the list follower's thread."""
    first = os.getpid()
    fetched = Recorder.fetched
    calls = 0
    here = {
        "": lambda: True,
        "forked": lambda: os.getpid() != first,
        "follower": lambda: threading.current_thread().name == "list-follower",
    }[where]

    def fetched_and_act(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        acting = here()
        calls += acting
        if acting and before:
            act(calls)
        result = fetched(self, *args, **kwargs)
        if acting and not before:
            act(calls)
        return result

    Recorder.fetched = fetched_and_act  # type: ignore[method-assign]


def die_at(groups: int, run: int | None = None) -> Callable[[int], None]:
    """SIGKILL this process at the ``groups``-th group; with ``run``, that process first (the
    crawling process, when its archiving process wrote the group)."""

    def die(count: int) -> None:
        if count >= groups:
            if run is not None:
                os.kill(run, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)

    return die


def fail(_count: int) -> None:
    raise ArchiveError("cannot write /full/disk.warc.gz: No space left on device")


def actor(how: str, run: int | None) -> Callable[[int], None]:
    return {"slow": lambda _n: time.sleep(0.05), "fail": fail}.get(how) or die_at(int(how), run)


if __name__ == "__main__":
    where, _, how = sys.argv[1].rpartition(":")
    run = None if where else os.getpid()  # the whole run dies, whichever process archives
    on_fetched(actor(how, run), where=where, before=how in ("slow", "fail"))
    sys.exit(main(sys.argv[2:]))
