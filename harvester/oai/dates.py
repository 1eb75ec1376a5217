"""OAI-PMH datestamps on the harvester's side (spec §3.3): pure functions, no I/O.

A UTCdatetime comes in one of two granularities, ``YYYY-MM-DD`` or ``YYYY-MM-DDThh:mm:ssZ``
(§3.3.1); a repository declares which one its ``from``/``until`` arguments take in Identify
(§4.2). Anything else in a datestamp (an offset, a missing ``Z``, 30 February) is a
:class:`~harvester.exceptions.ProtocolError`. A ``responseDate`` is read more leniently
(:func:`response_date`): real installations send one with a UTC offset
(``2023-03-30T16:02:12+05:45``), which is converted to UTC. An incremental harvest starts one
granularity unit before the last ``responseDate``, so nothing changed in that same second (or
day) is missed.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

from harvester.exceptions import ProtocolError

DAY = "YYYY-MM-DD"
SECONDS = "YYYY-MM-DDThh:mm:ssZ"
GRANULARITIES = (DAY, SECONDS)

_DATE_FORMATS = {DAY: "%Y-%m-%d", SECONDS: "%Y-%m-%dT%H:%M:%SZ"}
_DATE_PATTERNS = {
    DAY: re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
    SECONDS: re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"),
}
_UNITS = {DAY: timedelta(days=1), SECONDS: timedelta(seconds=1)}
# ISO 8601 with an offset (or Z), fractions of a second allowed: what sickle would take.
_OFFSET_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})"
)


@functools.lru_cache(maxsize=1024)  # a list's datestamps repeat: a refresh stamps many alike
def parse_oai_datestamp(text: str) -> datetime:
    """A UTCdatetime in either granularity, as an aware UTC datetime.

    >>> parse_oai_datestamp("2024-05-10T12:30:00Z")
    datetime.datetime(2024, 5, 10, 12, 30, tzinfo=datetime.timezone.utc)
    >>> parse_oai_datestamp("2024-05-10")
    datetime.datetime(2024, 5, 10, 0, 0, tzinfo=datetime.timezone.utc)
    >>> parse_oai_datestamp("2024-02-30")
    Traceback (most recent call last):
    ...
    harvester.exceptions.ProtocolError: bad OAI-PMH datestamp '2024-02-30'
    >>> parse_oai_datestamp("2024-05-10T12:30:00+02:00")
    Traceback (most recent call last):
    ...
    harvester.exceptions.ProtocolError: bad OAI-PMH datestamp '2024-05-10T12:30:00+02:00'
    """
    value = text.strip()
    for granularity, pattern in _DATE_PATTERNS.items():
        if pattern.fullmatch(value):
            try:
                parsed = datetime.strptime(value, _DATE_FORMATS[granularity])
            except ValueError:
                break
            return parsed.replace(tzinfo=UTC)
    raise ProtocolError(f"bad OAI-PMH datestamp {text!r}")


def checked_datestamp(text: str, where: str) -> datetime:
    """:func:`parse_oai_datestamp`, its :class:`ProtocolError` led by ``where`` (the URL and
    the element the datestamp came from)."""
    try:
        return parse_oai_datestamp(text)
    except ProtocolError as exc:
        raise ProtocolError(f"{where}: {exc}") from None


def response_date(text: str, where: str) -> tuple[str, bool]:
    """A ``responseDate`` (§3.2) as a UTCdatetime in seconds, and whether it had to be
    converted (an offset or fractions of a second); ProtocolError, led by ``where``, for
    anything that is no ISO 8601 time at all.

    >>> response_date("2024-05-10T12:30:00Z", "u")
    ('2024-05-10T12:30:00Z', False)
    >>> response_date("2023-03-30T16:02:12+05:45", "u")
    ('2023-03-30T10:17:12Z', True)
    >>> response_date("2023-03-30 16:02", "u")
    Traceback (most recent call last):
    ...
    harvester.exceptions.ProtocolError: u: bad OAI-PMH datestamp '2023-03-30 16:02'
    """
    value = text.strip()
    if any(pattern.fullmatch(value) for pattern in _DATE_PATTERNS.values()):
        checked_datestamp(value, where)  # a day's too, as the harvester always took it
        return value, False
    if _OFFSET_TIME.fullmatch(value):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return format_for_granularity(moment, SECONDS), True
    raise ProtocolError(f"{where}: bad OAI-PMH datestamp {text!r}")


def format_for_granularity(moment: datetime, granularity: str) -> str:
    """``moment`` (timezone-aware) as a ``from``/``until`` argument in ``granularity``.

    >>> when = datetime(2024, 5, 10, 12, 30, 5, 999, tzinfo=UTC)
    >>> format_for_granularity(when, "YYYY-MM-DD"), format_for_granularity(when, SECONDS)
    ('2024-05-10', '2024-05-10T12:30:05Z')
    """
    if granularity not in _DATE_FORMATS:
        raise ValueError(f"unknown OAI-PMH granularity {granularity!r}")
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no defined UTC time")
    utc = moment.astimezone(UTC)
    day = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"  # strftime drops zeros before 1000
    return day if granularity == DAY else f"{day}T{utc:%H:%M:%S}Z"


def overlap_from(previous_response_date: str, granularity: str) -> str:
    """The ``from`` of an incremental harvest: the last responseDate less one granularity unit.

    The overlap re-lists anything changed in the same second (or day) as the last response.

    >>> overlap_from("2024-05-10T12:30:00Z", SECONDS)
    '2024-05-10T12:29:59Z'
    >>> overlap_from("2024-03-01T00:00:30Z", DAY)
    '2024-02-29'
    >>> overlap_from("0001-01-01T00:00:00Z", DAY)
    '0001-01-01'
    """
    moment = parse_oai_datestamp(previous_response_date)
    unit = _UNITS.get(granularity)
    if unit is None:
        raise ValueError(f"unknown OAI-PMH granularity {granularity!r}")
    try:
        moment -= unit
    except OverflowError:
        moment = datetime.min.replace(tzinfo=UTC)
    return format_for_granularity(moment, granularity)
