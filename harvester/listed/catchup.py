"""Catch-up passes: a list complete at its end although records changed while it was read.

A provider bounds a list when it answers its first page (its responseDate, OAI-PMH 2.0
§3.5): a record that changes while the list is read gets a datestamp past that bound, so the
list either leaves it out (it had not reached it yet) or has shown its older version. Our own
provider does so on purpose: its plugins analyse a refresh's files after listing them and
move their records' datestamps (``docs/plugins.md``); a DSpace being edited does the same.

So when a list ends with a responseDate later than its bound (or with ``noRecordsMatch`` to a
resumed page, our provider's answer when every record left changed), the list is read again ``from``
that bound (in the repository's granularity; ``from`` is inclusive) and what it names is
noted as any list's headers are (a record newer than its archived version becomes pending).
A pass that names nothing the run has not seen (an identifier with that datestamp, at or past
the first bound) ends the catching up; so does ``catch_up_passes`` passes (a setting; the
next run lists what changes after). Each pass is its own list in the state, so the next
run's ``from`` is the last pass's bound: nothing changed during the run is skipped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from harvester.oai.dates import format_for_granularity, parse_oai_datestamp
from harvester.storage.protocol import Listed

log = logging.getLogger(__name__)


@dataclass
class ListWatch:
    """What one list's passes have named at or past its first bound, and how each ended."""

    granularity: str
    floor: datetime | None = None  # the first pass's bound, in the granularity
    since: datetime | None = None  # the pass under way lists from here (None: the first)
    bound: str | None = None  # the pass's bound: its first page's responseDate
    last: str | None = None  # its last page's responseDate
    new: int = 0  # headers of the pass that the run had not seen
    passes: int = 0  # catch-up passes made
    cut: bool = False  # a resumed page was refused as empty: the rest changed meanwhile
    seen: set[tuple[str, str]] = field(default_factory=set)

    def page(self, listed: list[Listed], response_date: str, bound: str | None) -> int:
        """Note a page of the pass under way (``bound``: its first page's responseDate, as
        the state keeps it); how many of its headers are new to the run."""
        if self.bound is None and bound is not None:
            self.bound = bound
            if self.floor is None:
                self.floor = self._at_granularity(bound)
        self.last = response_date
        if self.floor is None:
            return len(listed)
        fresh = 0
        for item in listed:
            if parse_oai_datestamp(item.datestamp) < self.floor:
                fresh += 1  # before the first bound: only the first pass names such a one
                continue
            key = (item.identifier, item.datestamp)
            if key not in self.seen:
                self.seen.add(key)
                fresh += 1
        if self.since is not None:
            self.new += fresh
        return fresh

    def next_from(self, most: int) -> str | None:
        """The ``from`` of one more pass, or None: the last pass ended within its bound's
        second (or day), found nothing new, or ``most`` passes are made."""
        if self.bound is None or self.last is None:
            return None
        if self.since is not None and self.new == 0:
            return None
        if not self.cut and self._at_granularity(self.last) <= self._at_granularity(self.bound):
            return None
        if self.passes >= most:
            log.info("records still changed during catch-up pass %d; the next run lists them", most)
            return None
        return format_for_granularity(parse_oai_datestamp(self.bound), self.granularity)

    def ended_early(self) -> None:
        """A resumed page was answered ``noRecordsMatch``: every record the list had left
        changed after its bound (our provider says so, OAI-PMH.xsd wanting no empty page)."""
        self.cut = True

    def begin(self, from_: str) -> None:
        """A catch-up pass starts from ``from_``."""
        self.passes += 1
        self.cut = False
        self.since = parse_oai_datestamp(from_)
        self.bound = self.last = None
        self.new = 0

    def _at_granularity(self, date: str) -> datetime:
        moment = parse_oai_datestamp(date)
        return parse_oai_datestamp(format_for_granularity(moment, self.granularity))
