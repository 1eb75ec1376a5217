"""One tool run on one version of a file (a provider plugin, or the harvester's identification):
what the tool said, and what it means.

``status`` is ``ok`` (the tool ran to its end with exit code 0), ``failed`` (it exited
with another code or could not start: a malformed file often ends so), ``timeout`` (cut at
its time limit, wall clock or CPU) or ``output-limit`` (cut when its output passed the
limit); a tool that cannot get the memory it asks for under the limit ends ``failed``.
``facts`` are the few values a built-in reads out of its output for the PREMIS description
(``puid``, ``format_name``, ``format_version``, ``mime``, ``description``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

STATUSES = ("ok", "failed", "timeout", "output-limit")


@dataclass(frozen=True, slots=True)
class Analysis:
    """What plugin ``label`` (``tool`` at ``tool_version``) found in the file whose SHA-256
    digest is ``sha256``, at ``ran_at`` (a UTC second)."""

    sha256: str
    label: str
    tool: str
    tool_version: str
    ran_at: int
    status: str
    exit_code: int | None
    output: bytes
    seconds: float
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"
