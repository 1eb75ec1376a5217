"""The CLOCK cache: second chances, capacity, hit counting."""

from __future__ import annotations

from harvester.crawl.seen.clockcache import ClockCache


def test_clock_gives_a_referenced_entry_a_second_chance() -> None:
    cache = ClockCache(3)
    for key in (1, 2, 3):
        cache.insert(key)
    assert cache.hit(1)
    cache.insert(4)  # the hand clears 1's bit and passes it; 2 goes
    assert 1 in cache and 2 not in cache
    cache.insert(5)  # 3 was never referenced
    assert 3 not in cache
    cache.insert(6)  # 1 has used its second chance
    assert 1 not in cache
    assert all(key in cache for key in (4, 5, 6))


def test_clock_keeps_a_repeatedly_referenced_entry() -> None:
    cache = ClockCache(4)
    cache.insert(0)
    for key in range(1, 100):
        assert cache.hit(0)
        cache.insert(key)
        assert 0 in cache
    assert cache.hits == 99


def test_clock_respects_its_capacity() -> None:
    cache = ClockCache(10)
    for key in range(1000):
        if key % 3:
            cache.hit(key - 1)
        cache.insert(key)
        assert len(cache) <= 10
    assert len(cache) == 10
    assert 999 in cache
    empty = ClockCache(0)
    empty.insert(1)
    assert len(empty) == 0 and not empty.hit(1)


def test_clock_counts_hits_only() -> None:
    cache = ClockCache(2)
    assert not cache.hit(1)
    cache.insert(1)
    assert cache.hit(1) and cache.hit(1)
    assert not cache.hit(2)
    assert cache.hits == 2
