"""The seen-URL set: semantics, persistence, merging, crash safety, stats."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from harvester.crawl.seen.fingerprintfile import (
    HEADER,
    LEGACY_HEADER,
    LEGACY_MAGIC,
    MAGIC,
    FingerprintFile,
)
from harvester.crawl.seen.seenset import URL_BITS, SeenSet, fingerprint
from harvester.exceptions import StateError

REPO = Path(__file__).resolve().parent.parent


def url(i: int, hosts: int = 37) -> str:
    return f"https://host{i % hosts}.example.org/section/{i % 7}/item-{i}.html"


def stored(path: Path) -> tuple[list[int], bytes]:
    """The store read back raw: the header checked, every fingerprint in file order, the filter."""
    data = path.read_bytes()
    magic, count, filter_bytes = HEADER.unpack_from(data)
    assert magic == MAGIC
    assert len(data) == HEADER.size + 8 * count + filter_bytes
    end = HEADER.size + 8 * count
    return [k for (k,) in struct.iter_unpack(">Q", data[HEADER.size : end])], data[end:]


def stored_keys(path: Path) -> list[int]:
    return stored(path)[0]


def passes(bitmap: bytes, key: int) -> bool:
    """Whether the filter lets ``key`` through: bit ``key mod 8`` of byte ``key div 8`` (mod
    the filter's size)."""
    bit = key % (8 * len(bitmap))
    return bool(bitmap[bit // 8] & (1 << bit % 8))


def assert_sorted_unique(keys: list[int]) -> None:
    assert all(a < b for a, b in pairwise(keys))


# -- fingerprints ------------------------------------------------------------------------


def test_fingerprints_are_fixed_values() -> None:
    # Persisted stores depend on them (no per-process salt): a change orphans every store.
    assert fingerprint("https://example.org/") == 0xA0593AAF4514763A
    assert fingerprint("http://example.org/a?b=c") == 0xA0593092C2D9CB82


def test_same_host_shares_the_top_bits() -> None:
    prefixes = {fingerprint(f"https://example.org/p/{i}?q={i}") >> URL_BITS for i in range(200)}
    assert len(prefixes) == 1
    fps = {fingerprint(f"https://example.org/p/{i}") for i in range(200)}
    assert len(fps) == 200


def test_different_hosts_usually_differ_in_the_top_bits() -> None:
    prefixes = {fingerprint(f"https://www.site{i}.org/") >> URL_BITS for i in range(2000)}
    assert len(prefixes) >= 1990  # 2000 of 2**20 buckets: about 2 collisions expected


def test_one_hosts_fingerprints_are_stored_together(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    with SeenSet(path) as s:
        s.add_many_if_new(url(i, hosts=5) for i in range(500))
    hosts = [key >> URL_BITS for key in stored_keys(path)]
    runs = [a for a, b in pairwise(hosts) if a != b]
    assert len(runs) == 4  # five hosts, five contiguous runs


def test_fingerprint_of_a_url_without_host() -> None:
    assert 0 <= fingerprint("mailto:someone") < 2**64
    assert fingerprint("a") != fingerprint("b")


# -- set semantics -----------------------------------------------------------------------


@pytest.fixture
def seen(tmp_path: Path) -> Iterator[SeenSet]:
    with SeenSet(tmp_path / "seen.fp", cache_size=8, buffer_size=50, index_stride=4) as s:
        yield s


def test_add_if_new(seen: SeenSet) -> None:
    assert seen.add_if_new("https://example.org/a")
    assert not seen.add_if_new("https://example.org/a")
    assert seen.add_if_new("https://example.org/b")
    assert "https://example.org/a" in seen
    assert "https://example.org/c" not in seen
    assert len(seen) == 2


def test_contains_does_not_add(seen: SeenSet) -> None:
    assert "https://example.org/a" not in seen
    assert "https://example.org/a" not in seen
    assert len(seen) == 0
    assert seen.add_if_new("https://example.org/a")


def test_add_many_returns_the_new_ones_in_order(seen: SeenSet) -> None:
    seen.add_if_new(url(2))
    batch = [url(3), url(2), url(1), url(3), url(4)]
    assert seen.add_many_if_new(batch) == [url(3), url(1), url(4)]
    assert seen.add_many_if_new(batch) == []
    assert len(seen) == 4


def test_persists_across_close_and_open(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    with SeenSet(path, buffer_size=1000) as s:
        s.add_many_if_new(url(i) for i in range(500))  # stays in the buffer until close
    assert not (tmp_path / "seen.fp.tmp").exists()
    with SeenSet(path) as s:
        assert len(s) == 500
        assert all(url(i) in s for i in range(500))
        assert not any(url(i) in s for i in range(500, 700))
        assert not s.add_if_new(url(7))


def test_merges_keep_every_key_sorted_and_unique(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    urls = [url(i) for i in range(3000)]
    with SeenSet(path, buffer_size=256, cache_size=16, index_stride=8) as s:
        assert len(s.add_many_if_new(urls[::2])) == 1500  # several flushes, then the rest
        assert len(s.add_many_if_new(urls)) == 1500  # interleaved with what is stored
        assert s.stats.flushes >= 10
        s.flush()
        keys = stored_keys(path)
        assert len(keys) == len(s) == 3000
    assert_sorted_unique(keys)
    assert set(keys) == {fingerprint(u) for u in urls}


@pytest.mark.parametrize("stride", [1, 3, 256, 1024])
def test_lookups_find_exactly_the_stored_keys(tmp_path: Path, stride: int) -> None:
    # 1024: blocks wider than one mmap.find span are bisected first
    path = tmp_path / "seen.fp"
    with SeenSet(path, cache_size=0) as s:
        s.add_many_if_new(url(i) for i in range(0, 6000, 2))
    with SeenSet(path, cache_size=0, index_stride=stride) as s:
        assert [url(i) in s for i in range(6000)] == [i % 2 == 0 for i in range(6000)]


def write_store(
    path: Path,
    keys: list[int],
    magic: bytes = MAGIC,
    count: int | None = None,
    filter_bytes: int = 8,
) -> None:
    """A store written by hand, its filter letting through exactly the keys' bits."""
    count = len(keys) if count is None else count
    bitmap = bytearray(filter_bytes)
    for key in keys:
        bit = key % (8 * filter_bytes)
        bitmap[bit // 8] |= 1 << bit % 8
    data = b"".join(k.to_bytes(8, "big") for k in keys)
    path.write_bytes(HEADER.pack(magic, count, filter_bytes) + data + bitmap)


def write_legacy_store(path: Path, keys: list[int]) -> None:
    """A store of format 1: a 16-byte header and the keys, no filter."""
    data = b"".join(k.to_bytes(8, "big") for k in keys)
    path.write_bytes(LEGACY_HEADER.pack(LEGACY_MAGIC, len(keys)) + data)


def test_a_match_straddling_two_keys_is_not_a_hit(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    write_store(path, [0x0000000011223344, 0x55667788FFFFFFFF])
    store = FingerprintFile(path)
    store.open()
    assert store.contains(0x55667788FFFFFFFF)
    assert not store.contains(0x1122334455667788)  # bytes 4..12 of the key area
    store.close()


def test_a_match_in_the_filter_is_not_a_key(tmp_path: Path) -> None:
    # The filter follows the keys in the file: a search of the last block must stop at the
    # keys' end. Key 64 sets bit 0 of the 8-byte filter, whose bytes read as 1 << 56, a key
    # whose own bit is that one: it passes the filter and its search reaches the last block.
    path = tmp_path / "seen.fp"
    write_store(path, [64], filter_bytes=8)
    assert path.read_bytes()[-8:] == (1 << 56).to_bytes(8, "big")
    store = FingerprintFile(path)
    store.open()
    assert store.contains(64)
    assert not store.contains(1 << 56)
    store.close()


def test_the_filter_holds_every_stored_key_as_the_store_grows(tmp_path: Path) -> None:
    # It grows by a factor of 4 (a rebuild from every key) only when the store outgrows it.
    path = tmp_path / "seen.fp"
    sizes = []
    with SeenSet(path, buffer_size=700, cache_size=0) as s:
        for first in range(0, 5000, 1000):  # 700 a flush: the store passes 1024 and 4096
            s.add_many_if_new(url(i) for i in range(first, first + 1000))
            s.flush()
            keys, bitmap = stored(path)
            sizes.append(len(bitmap))
            assert len(keys) <= len(bitmap) < 4 * len(keys), "8 to 32 bits a key"
            assert all(passes(bitmap, key) for key in keys)
    assert len(keys) == 5000
    assert set(sizes) == {1024, 4096, 16384}


def test_the_filter_answers_most_new_urls_without_a_search(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    with SeenSet(path) as s:
        s.add_many_if_new(url(i) for i in range(20_000))
    with SeenSet(path, cache_size=0) as s:
        assert not any(url(i) in s for i in range(20_000, 30_000))
        assert all(url(i) in s for i in range(10_000))
        stats = s.stats
    assert stats.disk_probes == 20_000 and stats.disk_hits == 10_000
    assert stats.filtered >= 8_000  # 8 to 32 bits a key: 3 to 12 % of new keys pass


def test_a_store_of_format_1_is_read_then_rewritten_with_a_filter(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    old = [url(i) for i in range(300)]
    write_legacy_store(path, sorted(fingerprint(u) for u in old))
    with SeenSet(path, cache_size=0) as s:
        assert len(s) == 300
        assert all(u in s for u in old)
        assert not any(url(i) in s for i in range(300, 600))
        assert s.stats.filtered == 0  # no filter to answer from
        assert s.add_many_if_new(url(i) for i in range(200, 400)) == [
            url(i) for i in range(300, 400)
        ]
    keys, bitmap = stored(path)
    assert keys == sorted(fingerprint(url(i)) for i in range(400))
    assert all(passes(bitmap, key) for key in keys)
    with SeenSet(path, cache_size=0) as s:
        assert all(url(i) in s for i in range(400))
        assert not any(url(i) in s for i in range(400, 700))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"SEEN"), id="truncated header"),
        pytest.param(lambda p: write_store(p, [1, 2], magic=b"NOTSEEN!"), id="bad magic"),
        pytest.param(lambda p: write_store(p, [1, 2, 3], count=4), id="truncated keys"),
        pytest.param(lambda p: write_store(p, [5, 4, 3, 2, 1]), id="out of order"),
        pytest.param(lambda p: write_store(p, [1, 2], filter_bytes=12), id="filter size"),
        pytest.param(
            lambda p: p.write_bytes(p.read_bytes()[:-1]) if write_store(p, [1, 2]) is None else 0,
            id="truncated filter",
        ),
        pytest.param(
            lambda p: p.write_bytes(LEGACY_HEADER.pack(LEGACY_MAGIC, 2) + bytes(12)),
            id="truncated keys, format 1",
        ),
    ],
)
def test_a_corrupt_store_raises_state_error(
    tmp_path: Path, damage: Callable[[Path], object]
) -> None:
    path = tmp_path / "seen.fp"
    damage(path)
    with pytest.raises(StateError):
        SeenSet(path, index_stride=1).open()


def test_a_leftover_temp_file_is_dropped_on_open(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    with SeenSet(path) as s:
        s.add_if_new(url(1))
    (tmp_path / "seen.fp.tmp").write_bytes(b"half a merge")
    with SeenSet(path) as s:
        assert url(1) in s and len(s) == 1
    assert not (tmp_path / "seen.fp.tmp").exists()


def test_a_closed_set_refuses_lookups(tmp_path: Path) -> None:
    s = SeenSet(tmp_path / "seen.fp")
    with pytest.raises(StateError):
        s.add_if_new(url(1))
    s.open()
    s.add_if_new(url(1))
    s.close()
    with pytest.raises(StateError):
        _ = url(1) in s


# -- crash safety ------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from harvester.crawl.seen.seenset import SeenSet

    path, progress, first = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    fd = os.open(progress, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with SeenSet(path, cache_size=0, buffer_size=10**9) as seen:
        i = first
        while True:
            seen.add_many_if_new(
                f"https://host{j % 53}.example/p/{j}" for j in range(i, i + 4000)
            )
            i += 4000
            seen.flush()
            os.write(fd, f"{i}\\n".encode())  # everything below i survived a flush
    """
)


def flushed_until(progress: Path, first: int) -> int:
    lines = progress.read_text().splitlines()
    return int(lines[-1]) if lines else first


def kill_mid_flush(path: Path, progress: Path, first: int, flushes: int) -> bool:
    """Run the child; SIGKILL it once ``flushes`` flushes are done and the next is under way.

    Returns whether the kill landed while a merge's temporary file existed.
    """
    tmp = path.with_name(path.name + ".tmp")
    args = [sys.executable, "-c", CHILD, str(path), str(progress), str(first)]
    child = subprocess.Popen(args, cwd=REPO)
    deadline = time.monotonic() + 60
    try:
        while len(progress.read_bytes().splitlines()) < flushes:
            assert child.poll() is None, "the child died on its own"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        caught_deadline = time.monotonic() + 10
        while not tmp.exists() and time.monotonic() < caught_deadline:
            time.sleep(0.0002)
        caught = tmp.exists()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    return caught


def test_sigkill_during_flush_leaves_a_consistent_store(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    caught, first = 0, 0
    for round_ in range(3):
        progress = tmp_path / f"progress-{round_}"
        progress.write_bytes(b"")
        caught += kill_mid_flush(path, progress, first, flushes=3 + 2 * round_)
        last = flushed_until(progress, first)
        with SeenSet(path, cache_size=0) as s:  # opens without error
            keys = stored_keys(path)
            assert_sorted_unique(keys)
            assert len(keys) >= last
            missing = [j for j in range(last) if f"https://host{j % 53}.example/p/{j}" not in s]
            assert missing == []
        assert not path.with_name("seen.fp.tmp").exists()
        first = len(keys)  # the next child adds URLs that are not stored yet
    assert caught >= 1, "no kill landed inside a flush"


# -- statistics --------------------------------------------------------------------------


def test_stats_account_for_every_lookup(tmp_path: Path) -> None:
    path = tmp_path / "seen.fp"
    with SeenSet(path) as s:
        s.add_many_if_new(url(i) for i in range(10))
    with SeenSet(path, cache_size=4, buffer_size=100) as s:
        assert s.add_if_new(url(100))  # new: a disk probe that misses
        assert url(0) in s  # stored: a disk probe that hits, now cached
        assert url(0) in s  # a cache hit
        assert url(100) in s  # cached on insertion
        for i in range(1, 9):
            assert url(i) in s  # stored: evicts url(100) from the 4-entry cache
        assert url(100) in s  # back from the buffer
        stats = s.stats
    assert stats.lookups == 13
    assert stats.cache_hits == 2
    assert stats.buffer_hits == 1
    assert stats.disk_probes == 10 and stats.disk_hits == 9
    assert stats.lookups == stats.cache_hits + stats.buffer_hits + stats.disk_probes
    assert stats.size == 11
    assert stats.hit_rate == pytest.approx(2 / 13)


def test_rejects_bad_sizes(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SeenSet(tmp_path / "s", buffer_size=0)
    with pytest.raises(ValueError):
        SeenSet(tmp_path / "s", cache_size=-1)
    with pytest.raises(ValueError):
        SeenSet(tmp_path / "s", index_stride=0)


# -- against a model ---------------------------------------------------------------------

URLS = st.builds("https://h{}.example/{}".format, st.integers(0, 3), st.integers(0, 40).map(str))


class SeenSetMachine(RuleBasedStateMachine):
    """A SeenSet behaves like a Python set of URLs through flushes and reopening."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="seen-"))
        self.model: set[str] = set()
        self.seen = self._opened(cache_size=3, buffer_size=4, stride=2)

    def _opened(self, cache_size: int, buffer_size: int, stride: int) -> SeenSet:
        seen = SeenSet(
            self.dir / "seen.fp",
            cache_size=cache_size,
            buffer_size=buffer_size,
            index_stride=stride,
        )
        seen.open()
        return seen

    @rule(u=URLS)
    def add(self, u: str) -> None:
        assert self.seen.add_if_new(u) == (u not in self.model)
        self.model.add(u)

    @rule(u=URLS)
    def contains(self, u: str) -> None:
        assert (u in self.seen) == (u in self.model)

    @rule(batch=st.lists(URLS, max_size=10))
    def add_many(self, batch: list[str]) -> None:
        expected = []
        for u in batch:
            if u not in self.model:
                expected.append(u)
                self.model.add(u)
        assert self.seen.add_many_if_new(batch) == expected

    @rule()
    def flush(self) -> None:
        self.seen.flush()

    @rule(cache_size=st.integers(0, 5), buffer_size=st.integers(1, 6), stride=st.integers(1, 5))
    def reopen(self, cache_size: int, buffer_size: int, stride: int) -> None:
        self.seen.close()
        self.seen = self._opened(cache_size, buffer_size, stride)

    @invariant()
    def same_size(self) -> None:
        assert len(self.seen) == len(self.model)

    def teardown(self) -> None:
        self.seen.close()
        shutil.rmtree(self.dir, ignore_errors=True)


SeenSetMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_behaves_like_a_set = SeenSetMachine.TestCase
