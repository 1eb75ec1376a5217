"""The catch-up pass's decisions (``harvester/listed/catchup.py``): when a list is read again,
from where in the repository's granularity, what counts as new, and the bound on passes. The
passes against a real provider are in ``tests/test_plugin_backlog.py``."""

from __future__ import annotations

from harvester.listed.catchup import ListWatch
from harvester.oai.dates import DAY, SECONDS
from harvester.storage.protocol import Listed


def header(name: str, datestamp: str) -> Listed:
    url = f"http://example.org/{name}"
    return Listed(url, url, datestamp, (), False)


def test_a_list_that_ended_in_its_bounds_second_is_not_read_again() -> None:
    watch = ListWatch(SECONDS)
    watch.page(
        [header("a", "2026-01-01T00:00:00Z")], "2026-01-02T10:00:00Z", "2026-01-02T10:00:00Z"
    )
    assert watch.next_from(3) is None


def test_a_later_end_reads_the_list_again_from_its_bound_until_nothing_is_new() -> None:
    watch = ListWatch(SECONDS)
    bound = "2026-01-02T10:00:00Z"
    assert watch.page([header("a", "2026-01-01T00:00:00Z")], bound, bound) == 1
    assert watch.page([header("b", bound)], "2026-01-02T10:00:05Z", bound) == 1
    assert watch.next_from(3) == bound  # inclusive: b's second again
    watch.begin(bound)
    again = "2026-01-02T10:00:06Z"
    # b as already seen is not new; a restamped is
    assert watch.page([header("b", bound), header("a", "2026-01-02T10:00:04Z")], again, again) == 1
    watch.page([], "2026-01-02T10:00:08Z", again)
    assert watch.next_from(3) == again
    watch.begin(again)
    watch.page(
        [header("a", "2026-01-02T10:00:04Z")], "2026-01-02T10:00:09Z", "2026-01-02T10:00:09Z"
    )
    assert watch.next_from(3) is None  # nothing new: done


def test_passes_are_bounded() -> None:
    watch = ListWatch(SECONDS)
    watch.page(
        [header("a", "2026-01-02T10:00:00Z")], "2026-01-02T10:00:00Z", "2026-01-02T10:00:00Z"
    )
    watch.page([], "2026-01-02T10:00:01Z", None)
    for n in range(2):
        start = watch.next_from(2)
        assert start is not None
        watch.begin(start)
        first = f"2026-01-02T10:00:1{n}Z"
        watch.page([header("a", first)], first, first)
        watch.page([], f"2026-01-02T10:00:2{n}Z", first)
    assert watch.next_from(2) is None


def test_a_day_granularity_list_is_read_again_from_its_bounds_day() -> None:
    watch = ListWatch(DAY)
    watch.page([header("a", "2026-01-02")], "2026-01-02T10:00:00Z", "2026-01-02T10:00:00Z")
    watch.page([], "2026-01-02T23:59:59Z", None)
    assert watch.next_from(3) is None  # within the bound's day: nothing it could tell apart
    watch.page([], "2026-01-03T00:00:01Z", None)
    assert watch.next_from(3) == "2026-01-02"


def test_a_resumed_page_refused_as_empty_calls_for_a_pass() -> None:
    watch = ListWatch(SECONDS)
    bound = "2026-01-02T10:00:00Z"
    watch.page([header("a", "2026-01-01T00:00:00Z")], bound, bound)
    watch.ended_early()
    assert watch.next_from(3) == bound
    assert watch.next_from(0) is None  # catch_up_passes = 0: none
