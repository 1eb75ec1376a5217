"""A request's URL parts (harvester/http/requesturl.py): the short path for plain URLs gives exactly
what yarl gives, on generated URLs that are plain and URLs that only look so."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.http.requesturl import _PLAIN, RequestURL, general, request_url

LABELS = st.text("abcXYZ019-_.", min_size=0, max_size=6)
HOSTS = st.one_of(
    st.lists(LABELS, min_size=1, max_size=4).map(".".join),
    st.lists(st.integers(0, 300).map(str), min_size=1, max_size=5).map(".".join),
)
PORTS = st.one_of(st.just(""), st.integers(0, 70000).map(lambda p: f":{p}"), st.just(":080"))
SEGMENTS = st.one_of(
    st.sampled_from(["", ".", "..", ".a", "a.", "..b", "%7e", "%2F", "a b", "é", "?q=1", "#f"]),
    st.text("aZ09-._~!$&'()*+,;=:@%/? #\\", max_size=5),
)
URLS = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}{port}{''.join('/' + s for s in path)}",
    st.sampled_from(["http", "https", "HTTP"]),
    HOSTS,
    PORTS,
    st.lists(SEGMENTS, max_size=4),
)


def outcome(parse: Callable[[str], RequestURL], url: str) -> RequestURL | type[ValueError]:
    try:
        return parse(url)
    except ValueError:
        return ValueError


@settings(max_examples=3000, deadline=None)
@given(URLS)
def test_the_short_path_gives_what_yarl_gives(url: str) -> None:
    assert outcome(request_url, url) == outcome(general, url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/d12/page-00012.html",
        "https://www.example.org/a/.well-known/b~c",
        "http://h:80/",
        "http://h",
    ],
)
def test_plain_urls_take_the_short_path(url: str) -> None:
    assert _PLAIN.fullmatch(url) is not None
    assert request_url(url) == general(url)


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("http://h/a/./b/../c", "/a/c"),
        ("http://H/%7euser", "/~user"),
        ("http://h/a b?q=x y", "/a%20b?q=x+y"),
        ("http://h:65536/", ValueError),
        ("ftp://h/x", ValueError),
    ],
)
def test_other_urls_are_yarls(url: str, target: object) -> None:
    got = outcome(request_url, url)
    assert (got.target if isinstance(got, RequestURL) else got) == target
