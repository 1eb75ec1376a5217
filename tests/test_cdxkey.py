"""The CDXJ keys' short paths give exactly what surt and warcio give (harvester.archive.cdx.key)."""

from __future__ import annotations

from datetime import UTC, datetime

import surt
from hypothesis import example, given, settings
from hypothesis import strategies as st
from warcio.timeutils import iso_date_to_timestamp

from harvester.archive.cdx.key import _plain_url_key, timestamp, url_key


def general_key(url: str) -> str:
    """What cdxj-indexer does: surt, or the URL itself when surt fails."""
    try:
        key: str = surt.surt(url)
    except Exception:
        return url
    return key


# URLs near the short path's edges: www prefixes, numeric and hex labels, ports with
# defaults and leading zeros, dot and empty segments, upper case, escapes, queries.
LABEL = st.sampled_from(
    ["www", "www2", "wwwx", "example", "org", "a-b", "-a", "b-", "0", "1", "127", "255",
     "256", "010", "0x7f", "0x", "xn--bcher-kva", "A", "Ex", "co", "localhost", "9ab"]
)  # fmt: skip
HOST = st.lists(LABEL, min_size=1, max_size=5).map(".".join)
PORT = st.sampled_from(["", ":80", ":443", ":8080", ":080", ":0", ":65535", ":65536", ":99999"])
SEGMENT = st.sampled_from(
    ["a", "B", "index.html", "INDEX.HTML", ".", "..", "", ".hidden", "a.b.c", "x_y-z~w",
     "%41", "%7e", "a%20b", "a;jsessionid=1", "caf\u00e9", "sessionid", "a..b", "%20",
     "about%20us", "caf%C3%A9", "%c3%a9x", "a%23b", "%7F", "%7e%7F", "%09", "%00", "%1F",
     "%2520", "%25", "%ff", "%2e", "%2E%2E", "%2F", "a%20%2fb", "%3F", "%8", "%G0"]
)  # fmt: skip
PATH = st.lists(SEGMENT, max_size=5).map(lambda segments: "".join("/" + s for s in segments))
TAIL = st.sampled_from(["", "", "", "/", "?", "?b=1&a=2", "#top", "?jsessionid=x"])
URL = st.builds(
    lambda scheme, host, port, path, tail: f"{scheme}://{host}{port}{path}{tail}",
    st.sampled_from(["http", "https", "HTTP", "ftp"]),
    HOST,
    PORT,
    PATH,
    TAIL,
)


@settings(max_examples=3000, deadline=None)
@given(URL)
@example("http://www.org/")
@example("http://www.www.example.org/a/")
@example("http://127.0.0.1:8080/oai")
@example("http://127.1/x")
@example("http://2130706433/x")
def test_url_keys_are_surts(url: str) -> None:
    assert url_key(url) == general_key(url)


def test_plain_urls_take_the_short_path() -> None:
    """The provider's and the sample site's usual URLs: the short path must not go unused."""
    for url, key in [
        ("http://127.0.0.1:8080/oai", "1,0,0,127:8080)/oai"),
        ("http://127.0.0.1:8080/", "1,0,0,127:8080)/"),
        ("https://www.example.org", "org,example)/"),
        ("http://example.org:80/Docs/Page_2.HTML", "org,example)/docs/page_2.html"),
        ("http://example.org/a/b/", "org,example)/a/b"),
        ("http://example.org/About%20Us/caf%C3%A9", "org,example)/about%20us/caf%c3%a9"),
    ]:
        assert _plain_url_key(url) == key == general_key(url)
    for url in ["http://example.org/a%41b", "http://example.org/?q=1", "http://127.1/"]:
        assert _plain_url_key(url) is None


@settings(max_examples=500, deadline=None)
@given(
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1)),
    st.sampled_from(["seconds", "milliseconds", "microseconds"]),
)
def test_timestamps_are_warcios(moment: datetime, timespec: str) -> None:
    warc_date = moment.replace(tzinfo=UTC).isoformat(timespec=timespec).replace("+00:00", "Z")
    assert timestamp(warc_date) == iso_date_to_timestamp(warc_date)


def test_other_dates_go_to_warcio() -> None:
    assert timestamp("2013-12-26T10:11:12") == "20131226101112"  # no Z: warcio's parse
