"""The resumption loop's guard, sans-IO: which lists it lets go on and which it stops.

End to end, through a real provider and ``harvester harvest``: tests/test_hostile_provider.py.
"""

from __future__ import annotations

import doctest

import pytest

from harvester.exceptions import ProtocolError
from harvester.oai import guard as oaiguard
from harvester.oai.guard import SIZE_FACTOR, SIZE_SLACK, STALLED_PAGES, ListGuard


def test_doctests() -> None:
    result = doctest.testmod(oaiguard)
    assert result.attempted >= 3 and result.failed == 0


def test_an_honest_list_passes_empty_pages_and_all() -> None:
    guard = ListGuard()
    for page in range(100):
        guard.check(f"u{page}", [f"id{page}"], f"t{page}", 100)
        for empty in range(STALLED_PAGES - 1):  # fewer stalled pages than the limit
            guard.check("u", [], f"t{page}-{empty}", 100)
    guard.check("last", ["id0"] * 50, None, 100)  # the last page may stall: the list ends


def test_pages_without_new_identifiers_stop_the_list() -> None:
    guard = ListGuard()
    guard.check("u0", ["a", "b"], "t0", None)
    for page in range(1, STALLED_PAGES):
        guard.check(f"u{page}", ["b", "a"], f"t{page}", None)
    with pytest.raises(ProtocolError, match=f"^u{STALLED_PAGES}: {STALLED_PAGES} pages in a row"):
        guard.check(f"u{STALLED_PAGES}", ["a"], "fresh", None)


def test_a_list_far_past_its_complete_size_stops() -> None:
    guard = ListGuard()
    size, listed = 10, 0
    while listed + 5 <= SIZE_FACTOR * size + SIZE_SLACK:
        guard.check("u", [f"id{listed + i}" for i in range(5)], f"t{listed}", size)
        listed += 5
    with pytest.raises(ProtocolError, match="far past the completeListSize 10"):
        guard.check("v", [f"new{i}" for i in range(5)], "next", size)
