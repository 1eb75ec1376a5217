"""UTCdatetime parsing and formatting (§3.3)."""

from __future__ import annotations

import calendar
import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server_module.oai.dates import format_datestamp, parse_datestamp

MIN_EPOCH = calendar.timegm((1, 1, 1, 0, 0, 0))
MAX_EPOCH = calendar.timegm((9999, 12, 31, 23, 59, 59))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1970-01-01", (0, "day")),
        ("1970-01-01T00:00:00Z", (0, "seconds")),
        ("2024-02-29", (1709164800, "day")),
        ("2024-02-29T23:59:59Z", (1709164800 + 86399, "seconds")),
        ("1969-12-31T23:59:59Z", (-1, "seconds")),
        ("0001-01-01", (MIN_EPOCH, "day")),
        ("9999-12-31T23:59:59Z", (MAX_EPOCH, "seconds")),
    ],
)
def test_parse_valid(text: str, expected: tuple[int, str]) -> None:
    assert parse_datestamp(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2024",
        "2024-01",
        "2024-1-01",
        "24-01-01",
        "0000-01-01",
        "2024-13-01",
        "2024-00-10",
        "2024-01-00",
        "2024-01-32",
        "2024-02-30",
        "2023-02-29",
        "2024-01-01T",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00Z",
        "2024-01-01T00:00:00.5Z",
        "2024-01-01T00:00:00+01:00",
        "2024-01-01T00:00:00z",
        "2024-01-01t00:00:00Z",
        "2024-01-01 00:00:00Z",
        "2024-01-01T24:00:00Z",
        "2024-01-01T23:60:00Z",
        "2024-12-31T23:59:60Z",
        " 2024-01-01",
        "2024-01-01\n",
        "2024-01-01Z",
        "+2024-01-01",
        "12024-01-01",
        "٢٠٢٤-01-01",
    ],
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_datestamp(text)


@pytest.mark.parametrize(
    ("epoch", "text"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59Z"),
        (1709164800 + 86399, "2024-02-29T23:59:59Z"),
        (MIN_EPOCH, "0001-01-01T00:00:00Z"),
        (MAX_EPOCH, "9999-12-31T23:59:59Z"),
    ],
)
def test_format(epoch: int, text: str) -> None:
    assert format_datestamp(epoch) == text


@pytest.mark.parametrize("epoch", [MIN_EPOCH - 1, MAX_EPOCH + 1])
def test_format_rejects_out_of_range(epoch: int) -> None:
    with pytest.raises(ValueError):
        format_datestamp(epoch)


@given(st.integers(MIN_EPOCH, MAX_EPOCH))
def test_format_parse_round_trip(epoch: int) -> None:
    assert parse_datestamp(format_datestamp(epoch)) == (epoch, "seconds")


@given(st.integers(MIN_EPOCH, MAX_EPOCH))
def test_format_agrees_with_datetime(epoch: int) -> None:
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=epoch)
    assert format_datestamp(epoch) == moment.isoformat() + "Z"


@given(st.dates())
def test_day_round_trip(date: dt.date) -> None:
    epoch, granularity = parse_datestamp(date.isoformat())
    assert granularity == "day"
    assert format_datestamp(epoch) == f"{date.isoformat()}T00:00:00Z"


@given(st.text(max_size=30))
def test_parse_raises_only_value_error(text: str) -> None:
    try:
        epoch, granularity = parse_datestamp(text)
    except ValueError:
        return
    assert format_datestamp(epoch).startswith(text[:10])
    assert granularity in ("day", "seconds")


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ("2023-03-30T16:02:12Z", ("2023-03-30T16:02:12Z", False)),
        ("2023-03-30", ("2023-03-30", False)),  # a day, as taken before
        ("2023-03-30T16:02:12+05:45", ("2023-03-30T10:17:12Z", True)),  # a real installation's
        ("2023-03-30T16:02:12+0545", ("2023-03-30T10:17:12Z", True)),
        ("2023-03-30T23:30:00-03:00", ("2023-03-31T02:30:00Z", True)),
        ("2023-03-30T16:02:12.987Z", ("2023-03-30T16:02:12Z", True)),
        ("2023-03-30T16:02:12+00:00", ("2023-03-30T16:02:12Z", True)),
    ],
)
def test_harvester_reads_a_response_date_with_an_offset_in_utc(
    sent: str, expected: tuple[str, bool]
) -> None:
    from harvester.oai.dates import response_date

    assert response_date(sent, "u") == expected


@pytest.mark.parametrize("sent", ["2023-03-30T16:02", "2023-02-30T16:02:12+05:45", "x"])
def test_harvester_refuses_a_response_date_that_is_no_time(sent: str) -> None:
    from harvester.exceptions import ProtocolError
    from harvester.oai.dates import response_date

    with pytest.raises(ProtocolError, match="bad OAI-PMH datestamp"):
        response_date(sent, "u")
