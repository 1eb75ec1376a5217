"""UTCdatetime values (§3.3): the two request granularities and the response format.

Requests may give ``from`` and ``until`` as ``YYYY-MM-DD`` (day granularity) or
``YYYY-MM-DDThh:mm:ssZ`` (seconds granularity), nothing else (§3.3.1). Responses always use
the seconds form (§3.3.2). Internally a datestamp is an integer of UTC epoch seconds.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from functools import lru_cache
from typing import Final, Literal

__all__ = [
    "DAY",
    "DAY_SECONDS",
    "GRANULARITY_FORMATS",
    "SECONDS",
    "Granularity",
    "format_datestamp",
    "parse_datestamp",
]

Granularity = Literal["day", "seconds"]
DAY: Final = "day"
SECONDS: Final = "seconds"

#: How each granularity is spelled in the Identify response (§4.2).
GRANULARITY_FORMATS: Final[dict[Granularity, str]] = {
    "day": "YYYY-MM-DD",
    "seconds": "YYYY-MM-DDThh:mm:ssZ",
}

DAY_SECONDS: Final = 86_400

# [0-9], not \d: \d also matches non-ASCII digits such as "٢".
_DATESTAMP = re.compile(
    r"(?P<y>[0-9]{4})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:T(?P<H>[0-9]{2}):(?P<M>[0-9]{2}):(?P<S>[0-9]{2})Z)?"
)
_EPOCH_ORDINAL: Final = dt.date(1970, 1, 1).toordinal()
_MIN_EPOCH: Final = calendar.timegm((1, 1, 1, 0, 0, 0))
_MAX_EPOCH: Final = calendar.timegm((9999, 12, 31, 23, 59, 59))


def parse_datestamp(text: str) -> tuple[int, Granularity]:
    """The UTC epoch seconds of a request datestamp, and its granularity.

    A day stands for its first second; callers extend an ``until`` day to its end.

    >>> parse_datestamp("2024-02-29")
    (1709164800, 'day')
    >>> parse_datestamp("1970-01-01T00:00:01Z")
    (1, 'seconds')
    >>> parse_datestamp("0001-01-01")
    (-62135596800, 'day')
    >>> parse_datestamp("2023-02-29")
    Traceback (most recent call last):
    ...
    ValueError: not a valid date: '2023-02-29'
    >>> parse_datestamp("2024-01-01T00:00:00+01:00")
    Traceback (most recent call last):
    ...
    ValueError: not YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: '2024-01-01T00:00:00+01:00'
    """
    match = _DATESTAMP.fullmatch(text)
    if match is None:
        raise ValueError(f"not YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: {text[:40]!r}")
    year, month, day = (int(match[group]) for group in "ymd")
    hour, minute, second = (int(match[group] or 0) for group in "HMS")
    try:
        dt.datetime(year, month, day, hour, minute, second)  # checks the calendar and clock
    except ValueError:
        raise ValueError(f"not a valid date: {text!r}") from None
    granularity: Granularity = "seconds" if match["H"] else "day"
    return calendar.timegm((year, month, day, hour, minute, second)), granularity


@lru_cache(maxsize=4096)
def format_datestamp(epoch: int) -> str:
    """The seconds-granularity UTCdatetime of ``epoch`` (§3.3.2).

    Called once per record, so it is cached: many files share the second the index saw them.

    >>> format_datestamp(0)
    '1970-01-01T00:00:00Z'
    >>> format_datestamp(1709164800 + 86399)
    '2024-02-29T23:59:59Z'
    >>> format_datestamp(-62135596800)
    '0001-01-01T00:00:00Z'
    """
    if not _MIN_EPOCH <= epoch <= _MAX_EPOCH:
        raise ValueError(f"datestamp outside years 1-9999: {epoch}")
    days, seconds = divmod(epoch, DAY_SECONDS)
    date = dt.date.fromordinal(_EPOCH_ORDINAL + days)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    return (
        f"{date.year:04d}-{date.month:02d}-{date.day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}Z"
    )
