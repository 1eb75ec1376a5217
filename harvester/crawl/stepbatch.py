"""The step batch: many crawled pages' state writes, one commit.

A page's step (its mark, its dequeue, its links queued) is written into a state transaction
that stays open across pages, and commits once ``most`` steps are in it or ``seconds`` have
passed since its first. The transaction is :meth:`Frontier.step` (so the seen set persists a
batch's links only after its commit) inside the archivist's ``one_file`` block (the WARC
writer's, or its archiving process's rule: no group of an uncommitted page reaches a finished
file, where the reconcile step after a crash would not look). Every page's WARC group is
written before its step, hence before the commit that records it: a crash loses only steps
the state never heard of, whose pages are still queued and are fetched again, their groups
found by the reconcile step. A batch commits at the end of the step that fills it or finds
it due, or when the caller, idle, finds it due (:meth:`commit_if_due`).

A step that raises rolls the whole batch back (its earlier steps too) and re-raises: the state
then knows none of them, which is what a crash would have left. With ``most=1`` every step
commits on its own, as a shared crawl needs (each acknowledgement checked under its lease).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager

from harvester.exceptions import StateError


class StepBatch:
    def __init__(
        self,
        open_step: Callable[[], AbstractContextManager[None]],
        one_file: Callable[[], AbstractContextManager[None]],
        *,
        most: int,
        seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_step, self._one_file = open_step, one_file
        self.most, self.seconds, self.clock = max(1, most), seconds, clock
        self._stack: ExitStack | None = None
        self._steps = 0
        self._since = 0.0
        self.commits = 0

    @contextmanager
    def step(self) -> Iterator[None]:
        """One page's state writes, inside the open batch (opened if none is)."""
        if self._stack is None:
            self._begin()
        try:
            yield
        except BaseException as exc:
            self._end(exc)
            raise
        self._steps += 1
        if self._steps >= self.most or self.due_in() == 0.0:
            self.commit()

    def due_in(self) -> float | None:
        """Seconds until the open batch is due for its commit; None when nothing waits."""
        if self._stack is None or not self._steps:
            return None
        return max(0.0, self._since + self.seconds - self.clock())

    def commit_if_due(self) -> None:
        if self.due_in() == 0.0:
            self.commit()

    def commit(self) -> None:
        """Commit the steps of the open batch (if any)."""
        if self._stack is not None:
            self._end(None)

    def _begin(self) -> None:
        stack = ExitStack()
        stack.enter_context(self._one_file())
        stack.enter_context(self._open_step())
        self._stack, self._steps, self._since = stack, 0, self.clock()

    def _end(self, exc: BaseException | None) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            raise StateError("a step batch ended that had not begun")
        if exc is None:
            stack.close()
            self.commits += 1
        else:
            stack.__exit__(type(exc), exc, exc.__traceback__)
