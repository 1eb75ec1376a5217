"""The prefetcher: one item ahead in a thread, errors where they belong, a clean stop."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from harvester.listed.prefetcher import Prefetcher


class Pages:
    """Items 0..count-1, failing at ``fail_at``; counts how many were made."""

    def __init__(self, count: int, fail_at: int | None = None) -> None:
        self.count, self.fail_at, self.made = count, fail_at, 0
        self.threads: set[str] = set()

    def __iter__(self) -> Iterator[int]:
        for n in range(self.count):
            self.threads.add(threading.current_thread().name)
            if n == self.fail_at:
                raise RuntimeError(f"page {n} failed")
            self.made += 1
            yield n


def test_items_come_in_order_made_in_the_thread() -> None:
    pages = Pages(5)
    with Prefetcher(iter(pages), name="ahead") as prefetched:
        assert list(prefetched) == [0, 1, 2, 3, 4]
    assert pages.threads == {"ahead"}


def test_at_most_one_item_is_made_ahead_and_an_early_stop_joins_the_thread() -> None:
    pages = Pages(100)
    with Prefetcher(iter(pages)) as prefetched:
        for item in prefetched:
            if item == 3:
                break
    assert pages.made in (4, 5)  # the caller's four, and at most the one asked for next
    assert not any(t.name == "prefetcher" for t in threading.enumerate())


def test_an_error_reaches_the_caller_after_the_items_before_it() -> None:
    got = []
    with pytest.raises(RuntimeError, match="page 2 failed"), Prefetcher(iter(Pages(5, 2))) as p:
        got.extend(p)
    assert got == [0, 1]
