"""When to try an HTTP request again, and after how long: shared by both HTTP clients.

HTTP 429 and 5xx answers are transient (:func:`transient_error`); a retry waits an
exponential back-off with jitter (:func:`backoff_delay`), never shorter than the server's
``Retry-After`` (RFC 9110 §10.2.3, :func:`parse_retry_after`) in either of its forms. A
server asking for a longer pause than the cap ends the retries at once.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from harvester.exceptions import TransientFetchError

__all__ = ["backoff_delay", "parse_retry_after", "transient_error"]


def parse_retry_after(value: str, now: datetime) -> float | None:
    """Seconds to wait according to a ``Retry-After`` value (RFC 9110 §10.2.3), or None.

    >>> now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    >>> parse_retry_after("120", now)
    120.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now)
    30.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now)  # already past
    0.0
    >>> parse_retry_after("soon", now) is None, parse_retry_after("-5", now) is None
    (True, True)
    """
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(min(int(text), 2**31))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" means UTC without a claimed zone
        when = when.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def backoff_delay(
    attempt: int, retry_after: float | None, *, base: float, cap: float, rng: random.Random
) -> float | None:
    """Seconds to sleep before retry number ``attempt + 1``, or None to stop retrying.

    Exponential with "equal jitter" (between half and all of ``base * 2**attempt``), never
    shorter than the server's ``Retry-After``. None when the server asks for more than ``cap``.

    >>> rng = random.Random(7)
    >>> 0.25 <= backoff_delay(0, None, base=0.5, cap=60, rng=rng) <= 0.5
    True
    >>> backoff_delay(0, 3.0, base=0.5, cap=60, rng=rng)
    3.0
    >>> backoff_delay(20, None, base=0.5, cap=60, rng=rng) <= 60
    True
    >>> backoff_delay(0, 3600.0, base=0.5, cap=60, rng=rng) is None
    True
    """
    if retry_after is not None and retry_after > cap:
        return None
    exponential = min(cap, base * 2.0 ** min(attempt, 62))
    jittered = exponential / 2 + rng.uniform(0, exponential / 2)
    return max(jittered, retry_after or 0.0)


def transient_error(
    status: int, reason: str, url: str, retry_after: str | None, now: datetime
) -> TransientFetchError | None:
    """The error to retry for a 429 or 5xx answer, carrying its ``Retry-After``; else None.

    >>> now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    >>> error = transient_error(503, "Busy", "http://h/", "30", now)
    >>> str(error), error.retry_after
    ('HTTP 503 Busy from http://h/', 30.0)
    >>> transient_error(404, "Not Found", "http://h/", None, now) is None
    True
    """
    if status != 429 and not 500 <= status < 600:
        return None
    wait = None if retry_after is None else parse_retry_after(retry_after, now)
    return TransientFetchError(f"HTTP {status} {reason} from {url}", wait)
