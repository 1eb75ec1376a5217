"""Retry-After and back-off, shared by both HTTP clients: properties beyond the doctests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from hypothesis import given
from hypothesis import strategies as st

from harvester.http.retries import parse_retry_after

NOW = datetime(2020, 6, 1, 12, 0, 0, tzinfo=UTC)


@given(st.integers(min_value=0, max_value=10**12))
def test_retry_after_delta_seconds(seconds: int) -> None:
    assert parse_retry_after(f" {seconds} ", NOW) == float(min(seconds, 2**31))


@given(st.integers(min_value=-(10**8), max_value=10**8))
def test_retry_after_http_date(offset: int) -> None:
    when = NOW + timedelta(seconds=offset)
    assert parse_retry_after(format_datetime(when, usegmt=True), NOW) == max(0.0, float(offset))


@given(st.text(max_size=40))
def test_retry_after_never_raises(value: str) -> None:
    result = parse_retry_after(value, NOW)
    assert result is None or result >= 0.0
