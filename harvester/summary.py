"""What a run did: the counts every harvest and crawl reports at its end."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

from coop_common.exitcode import ExitCode

FETCH_COUNTS = ("fetched", "unchanged", "failed", "gone", "bytes", "changed_during")


@dataclass
class Summary:
    listed: int = 0
    fetched: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0  # failed fetches of this run still to be retried (harvester/failures.py)
    gone: int = 0  # resources this run found gone (a 404 or 410 repeated): settled
    abandoned: int = 0  # resources whose listed version failed every attempt (in the state)
    bytes: int = 0
    seconds: float = 0.0
    archived: int = 0
    changed_during: int = 0
    seen_hit_rate: float | None = None  # the crawl's seen-URL cache
    refused: int = 0  # URLs the crawl's scope or trap rules refused
    known: int = 0
    mode: str | None = None  # oai | records | crawl
    records: int = 0  # records mode: item DIDL records written
    unchanged_records: int = 0  # records mode: records listed again as they were
    broken: int = 0  # records mode: records left out of their page as broken
    lists_failed: int = 0  # records mode: lists that ended in an error
    endpoint: str | None = None
    seed: str | None = (
        None  # a listed run's start URL (harvester/listed/seed.py): fetched | unchanged | failed
    )
    errors: list[str] = field(default_factory=list)

    @property
    def finished(self) -> int:
        """Resources this run's fetches are done with: fetched, unchanged or failed."""
        return self.fetched + self.unchanged + self.failed

    @property
    def exit_code(self) -> ExitCode:
        """PARTIAL when resources failed that are still to be retried, or lists failed; else
        OK (a resource found gone or abandoned is settled, no failure of the run)."""
        partial = self.failed or self.broken or self.lists_failed
        return ExitCode.PARTIAL if partial else ExitCode.OK

    @property
    def coverage(self) -> float:
        """Archived or accounted-for resources over all resources the provider lists."""
        return 1.0 if self.known == 0 else self.archived / self.known

    def fetches(self) -> dict[str, object]:
        """What a fetch step adds to a run's counts, as JSON carries it (from another
        process or thread: :meth:`add_fetches`)."""
        counts: dict[str, object] = {name: getattr(self, name) for name in FETCH_COUNTS}
        counts["errors"] = list(self.errors)
        return counts

    def add_fetches(self, counts: Mapping[str, object]) -> None:
        """Add another fetch step's :meth:`fetches` to these counts."""
        for name in FETCH_COUNTS:
            value = counts.get(name, 0)
            setattr(self, name, getattr(self, name) + (value if isinstance(value, int) else 0))
        errors = counts.get("errors")
        if isinstance(errors, list):
            self.errors.extend(str(e) for e in errors)

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["coverage"] = round(self.coverage, 6)
        data["seconds"] = round(self.seconds, 3)
        data["linked"] = {
            "fetched": self.fetched,
            "unchanged": self.unchanged,
            "failed": self.failed,
        }
        return data


Progress = Callable[[Summary, int], None]  # (summary so far, resources still to fetch)
