"""The frontier against a real SQLite state and seen-URL store: what survives a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvester.crawl.frontier import Frontier
from harvester.crawl.hosts import Fetched, Politeness, QueuedURL
from harvester.crawl.policies import PolicySet
from harvester.crawl.quality import OPICScorer
from harvester.crawl.scope import Scope
from harvester.crawl.seen.seenset import SeenSet
from harvester.crawl.twolevel import make_scheduler
from harvester.storage.sqlite.state import SQLiteState

SITE = "http://example.org/"
LINKS = [f"http://example.org/page{i}.html" for i in range(5)]


class Crash(Exception):
    """Stands for whatever ends a step between its links' seen test and the state's commit."""


def frontier(state: SQLiteState, seen: SeenSet) -> Frontier:
    return Frontier(
        SITE,
        state,
        scheduler=make_scheduler("bfs", politeness=Politeness()),
        seen=seen,
        scope=Scope(["example.org"]),
        scorer=OPICScorer(),
        policies=PolicySet(),
    )


def fetched(front: Frontier) -> QueuedURL:
    """The next URL scheduled, as the crawler takes it."""
    item = front.next(0.0)
    assert item is not None
    return item


def seeded(state: SQLiteState, path: Path) -> tuple[SeenSet, Frontier, QueuedURL]:
    """An open seen set that flushes every URL at once, a frontier seeded with the site, and
    its root taken as the crawler takes it."""
    seen = SeenSet(path, buffer_size=1)
    seen.open()
    front = frontier(state, seen)
    front.seed([SITE])
    return seen, front, fetched(front)


@pytest.mark.parametrize("ending", ["killed", "closed"])
def test_links_of_a_step_that_never_committed_are_not_seen(tmp_path: Path, ending: str) -> None:
    """A step that fails after its links passed the seen test, before the state committed
    them: the seen store on disk must not hold them, whether the process is killed there (no
    close: a store flushing on its own schedule, every URL here, held them) or the failure
    ends the run, which closes the set. Otherwise no later link to them ever queues them."""
    path = tmp_path / "seen.fp"
    with SQLiteState(tmp_path / "state.sqlite") as state:
        seen, front, root = seeded(state, path)
        with pytest.raises(Crash), front.step():
            state.dequeue(root.url)
            assert len(front.discovered(root, LINKS)) == len(LINKS)
            raise Crash
        assert not any(url in seen for url in LINKS)
        if ending == "closed":
            seen.close()
        with SeenSet(path, buffer_size=1) as resumed:  # the next run
            again = frontier(state, resumed)
            assert [row.url for row in state.queued(SITE)] == [SITE], "rolled back"
            again.open()
            queued = again.discovered(fetched(again), LINKS)
        assert {row.url for row in queued} == set(LINKS)


def test_a_committed_step_is_seen_after_a_kill(tmp_path: Path) -> None:
    """The links a step committed are on disk in the seen store once the step ends (with a
    full buffer), and the next run does not queue them twice."""
    path = tmp_path / "seen.fp"
    with SQLiteState(tmp_path / "state.sqlite") as state:
        _seen, front, root = seeded(state, path)
        with front.step():
            state.dequeue(root.url)
            front.discovered(root, LINKS)
        with SeenSet(path) as resumed:  # killed: the first set is never closed
            assert all(url in resumed for url in LINKS)
            again = frontier(state, resumed)
            assert again.open() == len(LINKS)
            assert again.discovered(fetched(again), LINKS) == []


def test_links_to_a_waiting_url_add_to_its_persisted_scores(tmp_path: Path) -> None:
    """Later links to a URL still queued add to its scores in the scheduler and, when the
    step commits, in the state: a resumed crawl orders it as the killed one did."""
    with SQLiteState(tmp_path / "state.sqlite") as state:
        _seen, front, root = seeded(state, tmp_path / "seen.fp")
        with front.step():
            state.dequeue(root.url)
            front.discovered(root, LINKS)
        front.scheduler.done(root.host, Fetched(now=0.0, latency=0.0, nbytes=0, status=200))
        page = fetched(front)
        waiting = [url for url in LINKS if url != page.url]
        before = front.scheduler.waiting(waiting[0], page.host)
        assert before is not None
        with front.step():
            state.dequeue(page.url)
            assert front.discovered(page, waiting) == []
        after = front.scheduler.waiting(waiting[0], page.host)
        assert after is not None and after.score("backlinks") > before.score("backlinks")
        stored = {row.url: row.scores for row in state.queued(SITE)}
        for url in waiting:
            now = front.scheduler.waiting(url, page.host)
            assert now is not None and stored[url] == now.scores
