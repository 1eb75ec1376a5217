"""The SQLite state: one file per collection (by default ``DIR/state.sqlite``), which one
harvester at a time opens (``harvester/run/lock.py``).

:class:`SQLiteState` is the :class:`~harvester.storage.protocol.State` of ``sqlite:///PATH``
URLs, made of one part per concern: ``sources.py`` (and ``lists.py``), ``resources.py``,
``frontier.py``, all on the one connection of ``connection.py``. The transaction and batch
contract is the protocol's; a killed process leaves the file as the last completed call left
it (WAL, one short transaction per step).
"""

from __future__ import annotations

from pathlib import Path

from harvester.storage.protocol import LeaseStore
from harvester.storage.sqlite.frontier import SQLiteFrontier
from harvester.storage.sqlite.items import ItemState
from harvester.storage.sqlite.resources import SQLiteResources
from harvester.storage.sqlite.sources import SQLiteSources

SCHEME = "sqlite"


class SQLiteState(SQLiteSources, SQLiteResources, SQLiteFrontier):
    """The whole state on one SQLite connection."""

    leases: LeaseStore | None = None  # one harvester per collection: nothing to share

    def captures_by_worker(self, site: str) -> dict[str, int]:
        """The one harvester's captures, under the empty worker id."""
        counts = self.counts(site)
        archived = counts.get("archived", 0) + counts.get("deleted", 0)
        return {"": archived} if archived else {}

    @property
    def items(self) -> ItemState:
        return ItemState(self.db)


def open_sqlite(url: str) -> SQLiteState:
    """The state of ``sqlite:///PATH`` (relative PATH) or ``sqlite:////PATH`` (absolute),
    not opened yet."""
    return SQLiteState(Path(url.removeprefix(f"{SCHEME}:///")))
