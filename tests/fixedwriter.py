"""A WARC writer whose clock and record IDs are fixed, so two ways of writing the same records
can be compared byte for byte."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

from harvester.archive.warc import RotatingWARCWriter

MOMENT = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def fixed_writer(directory: Path, lines: list[str] | None = None) -> RotatingWARCWriter:
    """An open writer into ``directory`` dated :data:`MOMENT`, with counted version-4 IDs; the
    CDXJ lines of each file it finishes are added to ``lines``."""
    ids = (f"<urn:uuid:00000000-0000-4000-8000-{n:012d}>" for n in itertools.count())
    made = RotatingWARCWriter(
        directory,
        clock=lambda: MOMENT,
        make_id=lambda: next(ids),
        on_finish=None if lines is None else (lambda _name, captured: lines.extend(captured)),
    )
    made.open()
    return made
