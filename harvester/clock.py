"""The clock: the one source of "now" that components take as an argument.

Components that stamp or expire things (the fetcher, the robots.txt cache, the OAI-PMH client)
take a ``clock`` so tests can fix the time; :func:`utcnow` is the real one they default to.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@functools.lru_cache(maxsize=256)  # a site's files share their Last-Modified seconds
def http_time(value: str | None) -> float | None:
    """An HTTP-date (``Last-Modified``) as epoch seconds; None when absent or unreadable.

    >>> http_time("Sun, 06 Nov 1994 08:49:37 GMT"), http_time("soon")
    (784111777.0, None)
    """
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
