"""Crawler-trap detection: the rules for one URL, and query variants across URLs."""

from __future__ import annotations

import pytest

from harvester.crawl import scope as scope_module
from harvester.crawl.scope import Scope
from harvester.crawl.traps import QueryVariantCounter, TrapRules, check_trap


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://h/", None),
        ("http://h/a/b/a/b/a/b", None),
        ("http://h/a/b/a/b/a/b/a", "path segment 'a' occurs 4 times (limit 3)"),
        ("http://h/x//////y", "path segment '' occurs 5 times (limit 3)"),
        ("http://h/" + "/".join(f"s{n}" for n in range(16)) + "/", None),
        ("http://h/" + "/".join(f"s{n}" for n in range(17)), "path is 17 segments deep (limit 16)"),
        ("http://h/?" + "&".join(f"p{n}=1" for n in range(10)), None),
        (
            "http://h/?" + "&".join(f"p{n}=1" for n in range(11)),
            "query has 11 parameters (limit 10)",
        ),
        ("http://h/?a=1&&&&b=2", None),
        ("http://h/" + "x" * 2039, None),
        ("http://h/" + "x" * 2040, "URL is 2049 characters long (limit 2048)"),
    ],
)
def test_trap_rules(url: str, reason: str | None) -> None:
    assert check_trap(url, TrapRules()) == reason


def test_trap_rules_are_configurable() -> None:
    rules = TrapRules(max_url_length=20, max_path_depth=2, max_repeated_segments=1)
    assert check_trap("http://h/a/b", rules) is None
    assert check_trap("http://h/a/b/c", rules) == "path is 3 segments deep (limit 2)"
    assert check_trap("http://h/a/a", rules) == "path segment 'a' occurs 2 times (limit 1)"
    assert check_trap("http://h/abcdefghijkl", rules) is not None


def test_query_variants_are_bounded_per_path() -> None:
    counter = QueryVariantCounter(limit=3)
    calendar = [f"http://h/cal?month={month}" for month in range(1, 6)]
    assert [counter.check(url) for url in calendar] == [None, None, None] + [
        "more than 3 query variants of http://h/cal"
    ] * 2
    assert counter.check(calendar[0]) is None, "a variant seen before is still admitted"
    assert counter.check("http://h/cal") is None, "a URL without a query is no variant"
    assert counter.check("http://h/cal/?month=9") is None, "another path has its own count"
    assert counter.check("https://h/cal?month=9") is None, "another scheme too"
    assert counter.check("http://h:8080/cal?month=9") is None, "and another port"


def test_query_variant_limit_defaults_to_the_trap_rules() -> None:
    assert QueryVariantCounter().limit == TrapRules().max_query_variants_per_path == 50


def test_a_url_admitted_before_is_still_refused_too_deep_and_refusals_still_count() -> None:
    """Scope remembers the URLs it admitted: asked again, only their depth is checked. A URL
    refused is asked in full every time, and every refusal is counted."""
    scope = Scope(["h"], max_depth=2, traps=TrapRules(max_query_variants_per_path=1))
    assert scope.refusal("http://h/cal?day=1", 1) is None
    assert scope.refusal("http://h/cal?day=1", 2) is None  # the variant admitted before
    assert scope.refusal("http://h/cal?day=1", 3) == "depth: more than 2 links from a seed"
    assert (
        scope.refusal("http://h/cal?day=2", 1) == "trap: more than 1 query variants of http://h/cal"
    )
    assert scope.refusal("http://h/cal?day=2", 1) is not None
    assert scope.refusal("http://other/cal?day=1", 1) == "off-site: another host"
    assert scope.refused == {"depth": 1, "trap": 2, "off-site": 1}


def test_remembered_admissions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scope_module, "ADMITTED_CACHE", 3)
    scope = Scope(["h"], traps=TrapRules(max_query_variants_per_path=100))
    for n in range(10):
        assert scope.refusal(f"http://h/p{n}", 1) is None
    assert len(scope._admitted) == 3
    assert list(scope._admitted) == ["http://h/p7", "http://h/p8", "http://h/p9"]
