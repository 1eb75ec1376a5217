"""The lifecycle every stateful part shares: ``open()``, ``close()``, and a ``with`` block that
runs them (house style: the frontier, seen-set, writers, state and indexes are components)."""

from __future__ import annotations

from typing import Self


class Component:
    """A part that holds a resource between :meth:`open` and :meth:`close`."""

    def open(self) -> object:
        """Acquire what the part holds; the base holds nothing."""
        return None

    def close(self) -> None:
        """Release it; the base holds nothing."""

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
