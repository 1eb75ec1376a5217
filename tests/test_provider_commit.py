"""A list never includes a second that can still receive rows (issue 12, #13).

A refresh stamps its rows inside its write transaction, before it commits. When the second
turns between the stamp and the commit, a harvester that lists from ``<its last
responseDate>`` exactly (sickle's users do; it does not back off a second) must still see
them: the rows are either in the list that ended at that responseDate, or in the next one.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, cast

from sickle import Sickle
from sickle.oaiexceptions import NoRecordsMatch

from server_module.index.fileindex import FileIndex
from tests.conftest import OAI, start_provider
from tests.sites import make_site

WAIT_FOR_LIST_S = 2.0  # a list on loopback takes milliseconds, unless it waits for the commit


class Harvest:
    """One sickle ListIdentifiers run: the identifiers it saw and its responseDate."""

    def __init__(self, endpoint: str, **params: str) -> None:
        self.endpoint, self.params = endpoint, params
        self.seen: set[str] = set()
        self.response_date = ""

    def run(self) -> Harvest:
        try:
            items = Sickle(self.endpoint).ListIdentifiers(metadataPrefix="oai_dc", **self.params)
        except NoRecordsMatch:
            return self
        self.response_date = items.oai_response.xml.findtext(f"{OAI}responseDate")
        self.seen = {header.identifier for header in items}
        return self


class Straddling:
    """A write connection whose commit is preceded by the second turning and a harvest.

    This is exactly the race: the refresh has stamped its rows, the second turns, a harvester
    lists, and only then does the transaction commit. The harvest runs in a thread and is
    given a bounded time, because a provider that waits for the commit in flight cannot
    answer before it.
    """

    def __init__(self, conn: sqlite3.Connection, first: Harvest) -> None:
        self._conn, self.first = conn, first
        self.thread = threading.Thread(target=first.run, name="straddling-harvest")

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT" and not self.thread.is_alive() and self.thread.ident is None:
            time.sleep(int(time.time()) + 1.01 - time.time())  # the second turns
            self.thread.start()
            self.thread.join(WAIT_FOR_LIST_S)
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class StraddlingIndex(FileIndex):
    """The index as the provider's refresh uses it, with its first commit straddled."""

    def __init__(self, endpoint: str, *args: Any) -> None:
        super().__init__(*args)
        self.first = Harvest(endpoint)
        self.writers: list[Straddling] = []

    def _connect(self) -> sqlite3.Connection:
        conn = Straddling(super()._connect(), self.first)
        self.writers.append(conn)
        return cast(sqlite3.Connection, conn)

    def straddled(self) -> Straddling:
        (writer,) = (w for w in self.writers if w.thread.ident is not None)
        writer.thread.join(30)
        return writer


def test_a_commit_straddling_a_second_is_not_missed_from_the_last_response_date(
    tmp_path: Path,
) -> None:
    site = make_site(tmp_path / "www", pages=10)
    index = tmp_path / "idx.sqlite"
    with start_provider(site.root, index) as server:
        endpoint = server.url + "/oai"
        new = [site.root / f"new{i}.txt" for i in range(3)]
        for path in new:
            path.write_text(f"added while a harvester lists: {path.name}\n")
        with StraddlingIndex(endpoint, index, site.root, server.url) as idx:
            stats = idx.refresh()
            idx.straddled()
        first = idx.first
        assert stats is not None and stats.added == len(new)
        assert first.response_date, "the straddling harvest did not run"
        second = Harvest(endpoint, **{"from": first.response_date}).run()
    added = {f"{server.url}/{path.name}" for path in new}
    assert added <= first.seen | second.seen, (
        f"from={first.response_date} missed rows committed after that list"
    )
    assert len(first.seen) >= len(site.public)
