"""The exit codes of every command (``harvester``, ``oai-provider``), with what each means.

``harvester --help`` and README.md's "Exit codes" list them from here.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``harvester`` command's exit status says about its run."""

    OK = 0
    FAILED = 1
    USAGE = 2
    PARTIAL = 3
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        """One line for ``--help`` and the README."""
        return MEANINGS[self]


MEANINGS = {
    ExitCode.OK: "complete",
    ExitCode.FAILED: "failed (the cause is printed on one line)",
    ExitCode.USAGE: "usage error, or the collection is in use by another harvester",
    ExitCode.PARTIAL: "finished, but some resources failed; a later run retries them"
    " (404 or 410 twice: gone, no failure)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C or SIGTERM; with --workers, a worker ended by"
    " a signal); the next run resumes",
}
