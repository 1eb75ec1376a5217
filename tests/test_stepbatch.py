"""Many crawl steps, one commit (``crawl/stepbatch.py``), on a real SQLite state, seen-URL
store and WARC writer: what another reader sees, and what survives a step that fails."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harvester.archive.warc import RotatingWARCWriter
from harvester.crawl.frontier import Frontier
from harvester.crawl.hosts import Fetched
from harvester.crawl.seen.seenset import SeenSet
from harvester.crawl.stepbatch import StepBatch
from harvester.storage.sqlite.state import SQLiteState
from tests.test_frontier import SITE, Crash, fetched, frontier, seeded


def links(page: int) -> list[str]:
    return [f"{SITE}p{page}/l{i}.html" for i in range(3)]


def committed(path: Path) -> set[str]:
    """The frontier's URLs as another connection reads them: only what was committed."""
    with sqlite3.connect(path) as other:
        return {url for (url,) in other.execute("SELECT url FROM frontier")}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def batch(front: Frontier, tmp_path: Path, most: int, clock: Clock) -> StepBatch:
    writer = RotatingWARCWriter(tmp_path / "warcs")
    return StepBatch(front.step, writer.one_file, most=most, seconds=1.0, clock=clock)


def step(steps: StepBatch, front: Frontier, page: int) -> None:
    item = fetched(front)
    front.scheduler.done(item.host, Fetched(now=0.0, latency=0.0, nbytes=0, status=200))
    with steps.step():
        front.state.dequeue(item.url)
        front.discovered(item, links(page))


def test_steps_commit_together_after_most(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    with SQLiteState(db) as state:
        _seen, front, root = seeded(state, tmp_path / "seen.fp")
        steps = batch(front, tmp_path, 3, Clock())
        front.scheduler.done(root.host, Fetched(now=0.0, latency=0.0, nbytes=0, status=200))
        with steps.step():
            state.dequeue(root.url)
            front.discovered(root, links(0))
        step(steps, front, 1)
        assert committed(db) == {SITE}, "two steps of three: nothing committed yet"
        step(steps, front, 2)
        assert committed(db) == {SITE} | {url for p in range(3) for url in links(p)}
        assert steps.commits == 1 and steps.due_in() is None


def test_a_batch_is_due_after_its_seconds(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    clock = Clock()
    with SQLiteState(db) as state:
        _seen, front, root = seeded(state, tmp_path / "seen.fp")
        steps = batch(front, tmp_path, 100, clock)
        front.scheduler.done(root.host, Fetched(now=0.0, latency=0.0, nbytes=0, status=200))
        assert steps.due_in() is None
        with steps.step():
            state.dequeue(root.url)
            front.discovered(root, links(0))
        clock.now += 0.25
        assert steps.due_in() == pytest.approx(0.75)
        steps.commit_if_due()
        assert committed(db) == {SITE}
        clock.now += 0.75
        steps.commit_if_due()
        assert committed(db) == {SITE} | set(links(0))
        step(steps, front, 1)
        clock.now += 1.0
        step(steps, front, 2)  # the step that finds its batch due commits it
        assert committed(db) >= {url for p in (1, 2) for url in links(p)}


def test_a_failed_step_rolls_back_its_batch_and_unsees_its_links(tmp_path: Path) -> None:
    """The state then holds none of the batch, as after a crash, and the seen store on disk
    holds none of its links: the next run queues them when it finds them again."""
    db, path = tmp_path / "state.sqlite", tmp_path / "seen.fp"
    with SQLiteState(db) as state:
        seen, front, root = seeded(state, path)
        steps = batch(front, tmp_path, 10, Clock())
        with steps.step():
            state.dequeue(root.url)
            front.discovered(root, links(0))
        with pytest.raises(Crash), steps.step():
            raise Crash
        assert committed(db) == {SITE} and [r.url for r in state.queued(SITE)] == [SITE]
        assert not any(url in seen for url in links(0))
        seen.close()
        with SeenSet(path, buffer_size=1) as resumed:
            again = frontier(state, resumed)
            again.open()
            queued = again.discovered(fetched(again), links(0))
        assert {row.url for row in queued} == set(links(0))
