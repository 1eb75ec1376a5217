"""A CLOCK (second-chance) cache of fingerprints: the seen-URL test's first, in-memory step.

After Broder, Najork & Wiener, "Efficient URL caching for World Wide Web crawling" (WWW 2003),
who measured CLOCK as close to LRU at a fraction of its cost. ``bench/seen.py`` draws its hit
rate by size on a crawl trace (``bench/README.md``, "seen").
"""

from __future__ import annotations

__all__ = ["ClockCache"]


class ClockCache:
    """A fixed-size set of fingerprints with CLOCK (second-chance) replacement.

    A dict maps each key to its slot; parallel ``keys`` and ``referenced`` arrays hold the
    ring. A hit sets the slot's reference bit. To make room, the hand sweeps the ring,
    clearing set bits, and evicts the first slot whose bit is clear; a new entry starts with
    its bit clear, just behind the hand, so it survives one full sweep unreferenced.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"cache capacity must be >= 0, not {capacity}")
        self.capacity = capacity
        self.hits = 0
        self._slots: dict[int, int] = {}
        self._keys: list[int] = []
        self._referenced = bytearray(capacity)
        self._hand = 0

    def hit(self, key: int) -> bool:
        """Whether ``key`` is cached; if so, mark it referenced and count a hit."""
        slot = self._slots.get(key)
        if slot is None:
            return False
        self._referenced[slot] = 1
        self.hits += 1
        return True

    def insert(self, key: int) -> None:
        """Cache ``key``, which the caller knows is not cached, evicting one entry if full."""
        keys = self._keys
        if len(keys) < self.capacity:
            self._slots[key] = len(keys)
            keys.append(key)
        elif self.capacity:
            slot = self._victim()
            del self._slots[keys[slot]]
            keys[slot] = key
            self._slots[key] = slot

    def _victim(self) -> int:
        """Advance the hand past referenced slots (clearing them); return the first other."""
        referenced, hand, capacity = self._referenced, self._hand, self.capacity
        while referenced[hand]:
            referenced[hand] = 0
            hand = hand + 1 if hand + 1 < capacity else 0
        self._hand = hand + 1 if hand + 1 < capacity else 0
        return hand

    def clear(self) -> None:
        self._slots.clear()
        self._keys.clear()
        self._referenced = bytearray(self.capacity)
        self._hand = 0

    def __contains__(self, key: object) -> bool:
        """Membership without touching the reference bit (for inspection, not lookups)."""
        return key in self._slots

    def __len__(self) -> int:
        return len(self._keys)
