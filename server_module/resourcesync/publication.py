"""The documents a source publishes, by name, built from one read of the ledger.

The names are the reference client's defaults, under the site's base URL, so ``resync-sync
--baseline`` and ``--incremental`` work with no option but the URL:

- ``.well-known/resourcesync``: the Source Description (§8), naming the Capability List;
- ``capabilitylist.xml`` (§9): the Resource List and the Change List;
- ``resourcelist.xml`` (§10): every live file; beyond ``max_entries`` (50,000, the sitemap
  limit) a Resource List Index of ``resourcelist-00001.xml``, ``-00002.xml``, … (§10.2);
- ``changelist.xml`` (§12): every change since the baseline, oldest first, one part per run
  (and per ``max_entries`` changes of a run); a Change List Index of ``changelist-00001.xml``,
  … once there is more than one part (§12.2). A closed run's parts never change.

Sans-IO: the caller hands in a :class:`~server_module.resourcesync.ledger.LedgerReader` and
the time, and gets bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from server_module.resourcesync.documents import (
    MAX_ENTRIES,
    Entry,
    Head,
    Part,
    sitemapindex,
    urlset,
)
from server_module.resourcesync.ledger import LedgerReader

SOURCE = ".well-known/resourcesync"
CAPABILITIES = "capabilitylist.xml"
RESOURCES = "resourcelist.xml"
CHANGES = "changelist.xml"
NAMES = (SOURCE, CAPABILITIES, RESOURCES, CHANGES)
_PART = re.compile(r"(resourcelist|changelist)-(\d{5})\.xml")


@dataclass(frozen=True, slots=True)
class ChangePart:
    """One Change List document: a slice of one run's changes, and the run's interval."""

    run: int
    offset: int
    count: int
    from_: int | None
    until: int | None


class Publication:
    """Every document of the source as the ledger reads now."""

    def __init__(
        self, base_url: str, reader: LedgerReader, now: int, max_entries: int = MAX_ENTRIES
    ) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.reader = reader
        self.now = now
        self.max = max_entries

    def url(self, name: str) -> str:
        return self.base + name

    def names(self) -> Iterator[str]:
        """Every document's name (the static command writes each)."""
        yield from NAMES
        count = self._resource_parts()
        yield from (_part_name("resourcelist", n) for n in range(1, count + 1) if count > 1)
        parts = self._change_parts()
        yield from (_part_name("changelist", n) for n in range(1, len(parts) + 1) if len(parts) > 1)

    def document(self, name: str) -> bytes | None:
        """The document of that name, or None when there is none."""
        fixed = {
            SOURCE: self._source,
            CAPABILITIES: self._capabilities,
            RESOURCES: self._resources,
            CHANGES: self._changes,
        }
        if name in fixed:
            return fixed[name]()
        match = _PART.fullmatch(name)
        if match is None:
            return None
        number = int(match.group(2))
        if match.group(1) == "resourcelist":
            return self._resource_part(number)
        return self._change_part(number)

    # -- discovery ----------------------------------------------------------------------

    def _source(self) -> bytes:
        entry = Entry(self.url(CAPABILITIES), capability="capabilitylist")
        return urlset(Head("description"), [entry])

    def _capabilities(self) -> bytes:
        entries = [
            Entry(self.url(RESOURCES), capability="resourcelist"),
            Entry(self.url(CHANGES), capability="changelist"),
        ]
        return urlset(Head("capabilitylist", up=self.url(SOURCE)), entries)

    # -- the Resource List --------------------------------------------------------------

    def _resource_parts(self) -> int:
        return max(1, -(-self.reader.live_count() // self.max))

    def _resources(self) -> bytes:
        count = self._resource_parts()
        if count == 1:
            return self._resource_urlset(0, Head("resourcelist", up=self._cap(), at=self.now))
        parts = [
            Part(self.url(_part_name("resourcelist", n)), at=self.now) for n in range(1, count + 1)
        ]
        return sitemapindex(Head("resourcelist", up=self._cap(), at=self.now), parts)

    def _resource_part(self, number: int) -> bytes | None:
        if self._resource_parts() < 2 or not 1 <= number <= self._resource_parts():
            return None
        head = Head("resourcelist", up=self._cap(), at=self.now, index=self.url(RESOURCES))
        return self._resource_urlset((number - 1) * self.max, head)

    def _resource_urlset(self, offset: int, head: Head) -> bytes:
        return urlset(head, self.reader.live(offset, self.max))

    # -- the Change Lists ---------------------------------------------------------------

    def _change_parts(self) -> list[ChangePart]:
        parts: list[ChangePart] = []
        start = self.reader.baseline()
        for run in self.reader.runs():
            for offset in range(0, run.count, self.max):
                count = min(self.max, run.count - offset)
                parts.append(ChangePart(run.run, offset, count, start, run.until))
            start = run.until
        return parts

    def _changes(self) -> bytes:
        parts = self._change_parts()
        if len(parts) == 1:
            return self._change_urlset(parts[0], index=None)
        if not parts:
            head = Head("changelist", up=self._cap(), from_=self.reader.baseline() or self.now)
            return urlset(head, [])
        listed = [
            Part(self.url(_part_name("changelist", n)), from_=p.from_, until=p.until)
            for n, p in enumerate(parts, 1)
        ]
        return sitemapindex(Head("changelist", up=self._cap(), from_=parts[0].from_), listed)

    def _change_part(self, number: int) -> bytes | None:
        parts = self._change_parts()
        if len(parts) < 2 or not 1 <= number <= len(parts):
            return None
        return self._change_urlset(parts[number - 1], index=self.url(CHANGES))

    def _change_urlset(self, part: ChangePart, index: str | None) -> bytes:
        head = Head("changelist", up=self._cap(), from_=part.from_, until=part.until, index=index)
        return urlset(head, self.reader.changes(part.run, part.offset, part.count))

    def _cap(self) -> str:
        return self.url(CAPABILITIES)


def _part_name(kind: str, number: int) -> str:
    """The file name of a list's part.

    >>> _part_name("changelist", 3)
    'changelist-00003.xml'
    """
    return f"{kind}-{number:05d}.xml"
