"""The listed path's fetch step over several processes (``fetch_processes``; step 7 of
docs/architecture.md): one Python process archives a file in about a millisecond of CPU,
so on a fast provider it, not the provider, sets the pace; N processes use N cores.

After the list, the run forks N - 1 children, and each of the N processes fetches the
resources whose URL falls in its :class:`~harvester.listed.fetchstep.Shard`, with its share of
the connections (``concurrency`` and ``per_host`` divided among them, so the provider sees
no more than with one), its own WARC files (a writer's names carry its pid) and its own
connection to the state, where it commits its marks in short transactions. No connection to
the state crosses the fork: the parent closes its own before forking and opens it again.

Each process keeps the crash rules of one: a group reaches its WARC file before the commit
that marks it, and a commit's groups share one file, so after a kill of any of them the next
run's repair and reconcile find every group the state missed. A child dies with its parent
(``PR_SET_PDEATHSIG``). The parent, its own share done, waits for the children, adds their
counts to the run's summary and shows their progress with its own; a child that ended in an
error or by a signal fails the run (:class:`~harvester.exceptions.FetchProcessError`) once the
others are done: what it did not fetch stays pending for the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mmap
import os
import select
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NoReturn

from harvester.childprocess import become_child, fork
from harvester.exceptions import FetchProcessError
from harvester.listed.fetchstep import ListedFetch, Shard
from harvester.summary import Progress, Summary

AUTO_MIN = 2000  # resources below which one process fetches, unless told otherwise
AUTO_MIN_BYTES = 32 * 1024 * 1024  # ... unless this many bytes are due (declared or sampled)
SAMPLE = 8  # resources fetched first to guess the bytes due when the list told no sizes
AUTO_MAX = 4  # processes the default uses at most, one a core
SHOW_EVERY_S = 0.1  # the sum of all processes' progress is made at most this often
_SLOT = struct.Struct("qq")  # a child's (resources finished, bytes) for the progress


def process_count(
    wanted: int, remaining: int, delay: float, connections: int, due_bytes: int = 0
) -> int:
    """How many processes fetch ``remaining`` resources: ``wanted`` when given (> 0), else
    one a core (at most ``AUTO_MAX``) from ``AUTO_MIN`` resources or ``AUTO_MIN_BYTES``
    bytes due (``due_bytes``: as the list declared, or guessed from a sample) on; always
    one with a ``--delay`` (the pause between requests to a host must hold across them), and
    never more than there are resources or ``connections`` (the fewer of ``per_host`` and
    ``concurrency``: each process needs one). (A job shared over a database never comes
    here: its workers split it by host.)

    Below ``AUTO_MIN`` small files, a second process slows the run: the provider, not the
    harvester, sets their pace, and the child's start costs more than it takes over. Large
    files are the other way round: their digests and compression bound one process, so many
    bytes due get a process a core however few files they are.

    >>> process_count(0, 100, 0, 8), process_count(3, 100, 0, 8), process_count(3, 100, 0.5, 8)
    (1, 3, 1)
    >>> process_count(4, 100, 0, 2)
    2
    >>> process_count(0, 100, 0, 8, due_bytes=AUTO_MIN_BYTES) == min(os.cpu_count() or 1, 4)
    True
    """
    if delay > 0 or remaining < 2:
        return 1
    if wanted <= 0:
        many = remaining >= AUTO_MIN or due_bytes >= AUTO_MIN_BYTES
        wanted = min(os.cpu_count() or 1, AUTO_MAX) if many else 1
    return max(1, min(wanted, remaining, connections))


def fetch_in_processes(fetch: ListedFetch, wanted: int, due_bytes: int = 0) -> None:
    """Fetch every due resource of ``fetch`` over as many processes as
    :func:`process_count` says for ``wanted`` and the list's ``due_bytes`` (this one
    included). When the count alone keeps one process and the list declared no sizes (an
    OAI-PMH header has none), the first ``SAMPLE`` resources are fetched before the fork,
    and the bytes due are guessed from theirs."""
    total = fetch.remaining()
    count = _processes(fetch, wanted, total, due_bytes)
    if count == 1:
        asyncio.run(fetch.pending(total=total))
        return
    counters = mmap.mmap(-1, _SLOT.size * count)
    shown = _with_children(fetch.progress, counters, count)
    mine = replace(_share(fetch, Shard(0, count)), progress=shown)
    summary = fetch.summary
    children: list[_Child] = []

    def show() -> None:
        mine.progress(summary, max(total - summary.finished, 0))

    try:
        fetch.state.close()
        try:
            for index in range(1, count):  # an OSError (no more processes) ends the run
                children.append(_fork(fetch, Shard(index, count), total, counters))
        finally:
            fetch.state.open()
        asyncio.run(mine.pending(shard=Shard(0, count), total=total))
    except BaseException:
        for child in children:
            child.stop()
        raise
    finally:
        ended = [child.wait(show) for child in children]
    _merge(summary, ended)


def _processes(fetch: ListedFetch, wanted: int, total: int, due_bytes: int) -> int:
    """:func:`process_count` for ``fetch``; when only the bytes due could make it more than
    one and the list declared none, the first ``SAMPLE`` resources are fetched here and the
    bytes still due guessed from theirs."""
    settings = fetch.settings
    connections = min(settings.per_host, settings.concurrency)

    def count(remaining: int, due: int) -> int:
        return process_count(wanted, remaining, settings.delay, connections, due)

    if due_bytes or total <= SAMPLE or count(total, 0) > 1 or count(total, AUTO_MIN_BYTES) == 1:
        return count(total, due_bytes)
    summary = fetch.summary
    finished, size = summary.finished, summary.bytes
    asyncio.run(fetch.pending(total=total, most=SAMPLE))
    remaining = fetch.remaining()
    taken = max(summary.finished - finished, 1)
    return count(remaining, (summary.bytes - size) * remaining // taken)


def _part(total: int, count: int, index: int) -> int:
    """Process ``index``'s part of ``total`` connections split among ``count``: the parts add
    up to ``total`` (each is at least one: ``process_count`` makes no more processes than
    connections).

    >>> [_part(8, 3, i) for i in range(3)], [_part(16, 2, i) for i in range(2)]
    ([3, 3, 2], [8, 8])
    """
    return max(1, total // count + (index < total % count))


def _share(fetch: ListedFetch, shard: Shard) -> ListedFetch:
    """``fetch`` with ``shard``'s part of the connections."""
    settings = fetch.settings
    return fetch.with_connections(
        _part(settings.concurrency, shard.count, shard.index),
        _part(settings.per_host, shard.count, shard.index),
    )


@dataclass
class _Child:
    pid: int
    pipe: int  # read end: the child's summary, as JSON, then EOF

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)

    def wait(self, progress: Callable[[], None]) -> tuple[str, dict[str, object]]:
        """Read the child's report to its end, then reap it; (how it ended, its report)."""
        chunks = []
        while True:
            ready, _, _ = select.select([self.pipe], [], [], 0.5)
            if not ready:
                progress()
                continue
            chunk = os.read(self.pipe, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(self.pipe)
        _, status = os.waitpid(self.pid, 0)
        try:
            report = json.loads(b"".join(chunks) or b"{}")
        except ValueError:
            report = {}
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            return f"ended by signal {-code}", report
        if code == 0 and "error" not in report:
            return "", report
        return f"failed: {report.get('error', f'exit status {code}')}", report


def _fork(fetch: ListedFetch, shard: Shard, total: int, counters: mmap.mmap) -> _Child:
    read_end, write_end = os.pipe()
    pid, parent = fork()
    if pid == 0:
        os.close(read_end)
        _child(fetch, shard, total, counters, write_end, parent)
    os.close(write_end)
    return _Child(pid, read_end)


def _child(
    fetch: ListedFetch, shard: Shard, total: int, counters: mmap.mmap, out: int, parent: int
) -> NoReturn:
    """A child's whole life (:mod:`harvester.childprocess`): its share fetched, its report
    written, then ``_exit``."""
    code, report = 1, {}
    try:
        become_child(parent)
        report = _fetch_share(fetch, shard, total, counters)
        code = 0
    except BaseException as exc:
        report = {"error": str(exc) or type(exc).__name__}  # the parent's error line says it
    finally:
        try:
            os.write(out, json.dumps(report).encode())
        finally:
            os._exit(code)


def _fetch_share(
    fetch: ListedFetch, shard: Shard, total: int, counters: mmap.mmap
) -> dict[str, object]:
    at = _SLOT.size * shard.index

    def progress(summary: Summary, _remaining: int) -> None:  # shown by the parent
        _SLOT.pack_into(counters, at, summary.finished, summary.bytes)

    with _share(fetch, shard).apart(progress=progress) as mine:
        asyncio.run(mine.pending(shard=shard, total=total))
    return mine.summary.fetches()


def _with_children(
    shown: Progress, counters: mmap.mmap, count: int, clock: Callable[[], float] = time.monotonic
) -> Progress:
    """``shown`` given this process's counts with the children's added, at most every
    :data:`SHOW_EVERY_S` (it is called after every resource)."""
    last = -SHOW_EVERY_S

    def progress(summary: Summary, remaining: int) -> None:
        nonlocal last
        now = clock()
        if now - last < SHOW_EVERY_S:
            return
        last = now
        done = bytes_ = 0
        for index in range(1, count):
            finished, sent = _SLOT.unpack_from(counters, _SLOT.size * index)
            done, bytes_ = done + finished, bytes_ + sent
        seen = replace(summary, fetched=summary.fetched + done, bytes=summary.bytes + bytes_)
        shown(seen, max(remaining - done, 0))

    return progress


def _merge(summary: Summary, ended: list[tuple[str, dict[str, object]]]) -> None:
    """Add the children's counts to ``summary``; raise if any child did not finish."""
    failures = []
    for how, report in ended:
        summary.add_fetches(report)
        if how:
            failures.append(how)
    if failures:
        raise FetchProcessError(
            f"a fetching process {failures[0]}; what it did not archive stays pending:"
            " run the same command again to finish"
        )
