"""The harvest state behind one seam: ``protocol.py`` says what a state stores and promises,
``registry.py`` opens one by URL (:func:`open_state`), ``sqlite/`` implements it."""

from __future__ import annotations

from harvester.storage.registry import check_state_url, open_state

__all__ = ["check_state_url", "open_state"]
