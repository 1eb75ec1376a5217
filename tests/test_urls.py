"""Canonical URLs (RFC 3986 §5, §6)."""

from __future__ import annotations

import contextlib
import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from harvester.crawl.urls import canonicalize, host_of, host_of_canonical, is_in_scope

RFC_BASE = "http://a/b/c/d;p?q"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # case, default port, dot segments, unreserved escapes, fragment
        ("HTTP://Example.COM:80/a/./b/../c%7e?q=1#frag", "http://example.com/a/c~?q=1"),
        ("https://example.com:443/", "https://example.com/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com:0080", "http://example.com/"),
        ("http://example.com:/", "http://example.com/"),
        ("http://example.com:8080", "http://example.com:8080/"),
        # empty path, empty query, fragment only
        ("http://example.com", "http://example.com/"),
        ("http://example.com?", "http://example.com/"),
        ("http://example.com/?#", "http://example.com/"),
        ("http://example.com?q", "http://example.com/?q"),
        # userinfo is dropped
        ("http://user:secret@example.com/", "http://example.com/"),
        ("http://a@b@example.com/", "http://example.com/"),
        # hosts: IDNA, escapes, trailing dots, IPv4 and IPv6
        ("http://Bücher.DE/", "http://xn--bcher-kva.de/"),
        ("http://xn--BCHER-kva.de/", "http://xn--bcher-kva.de/"),
        ("http://b%C3%BCcher.de/", "http://xn--bcher-kva.de/"),
        ("http://ex%41mple.com/", "http://example.com/"),
        ("http://my_host.bücher.de/", "http://my_host.xn--bcher-kva.de/"),
        ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/"),
        ("http://a。b/", "http://a.b/"),
        ("http://example.com./", "http://example.com/"),
        ("http://example.com../", "http://example.com/"),
        ("http://192.168.0.1:80/", "http://192.168.0.1/"),
        ("http://[2001:DB8:0:0::1]:8080/", "http://[2001:db8::1]:8080/"),
        ("http://[::ffff:1.2.3.4]/", "http://[::ffff:102:304]/"),
        # percent-encoding: decode unreserved, upper-case the rest, never decode reserved
        ("http://h/%41%7a%2d%2e%5f%7E", "http://h/Az-._~"),
        ("http://h/%2f%3f%23%25%26%3d", "http://h/%2F%3F%23%25%26%3D"),
        ("http://h/%e9t%C3%A9", "http://h/%E9t%C3%A9"),
        ("http://h/%", "http://h/%25"),
        ("http://h/%zz%4", "http://h/%25zz%254"),
        ('http://h/a b|c\\d{e}^`[]"<>', "http://h/a%20b%7Cc%5Cd%7Be%7D%5E%60%5B%5D%22%3C%3E"),
        ("http://h/été", "http://h/%C3%A9t%C3%A9"),
        ("http://h/\U0001f600", "http://h/%F0%9F%98%80"),
        ("http://h/!$&'()*+,;=:@", "http://h/!$&'()*+,;=:@"),
        # the query keeps its order, its '+', its '?' and '/'; only escapes change
        ("http://h/?b=2&a=1&b=1", "http://h/?b=2&a=1&b=1"),
        ("http://h/?q=a+b&r=%2b%7e", "http://h/?q=a+b&r=%2B~"),
        ("http://h/?next=/a?b", "http://h/?next=/a?b"),
        ("http://h/?a[]=é", "http://h/?a%5B%5D=%C3%A9"),
        ("http://h/?q=%e9", "http://h/?q=%E9"),
        # dot segments, also when spelled as escapes, but not when '/' is escaped
        ("http://h/a/b/../../../c", "http://h/c"),
        ("http://h/a/%2E%2e/b", "http://h/b"),
        ("http://h/a/..%2Fb", "http://h/a/..%2Fb"),
        ("http://h/a/.", "http://h/a/"),
        ("http://h//a//b", "http://h//a//b"),
        # surrounding junk, tabs and newlines
        ("  http://h/a\n\tb \x00", "http://h/ab"),
    ],
)
def test_canonical_form(url: str, expected: str) -> None:
    assert canonicalize(url) == expected


@pytest.mark.parametrize(
    ("reference", "expected"),
    [  # RFC 3986 §5.4.1 and §5.4.2, where they concern http URLs
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g/"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q"),
        ("g#s", "http://a/b/c/g"),
        (";x", "http://a/b/c/;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"),
        ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"),
        ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"),
        ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g#s/../x", "http://a/b/c/g"),
        ("HTTPS://Other:443/x", "https://other/x"),
    ],
)
def test_resolution_against_a_base(reference: str, expected: str) -> None:
    assert canonicalize(reference, RFC_BASE) == expected


@pytest.mark.parametrize(
    "url",
    [
        "mailto:someone@example.com",
        "javascript:void(0)",
        "data:text/html,<p>x",
        "ftp://example.com/file",
        "file:///etc/passwd",
        "g:h",
        "//example.com/no-scheme",
        "/relative/without/base",
        "",
        "http:",
        "http://",
        "http:///path",
        "http://:80/",
        "http://../",
        "http://a..b/",
        "http://exa mple.com/",
        "http://exa<mple.com/",
        "http://example.com:port/",
        "http://example.com:99999/",
        "http://example.com:-1/",
        "http://[::1/",
        "http://[not-ipv6]/",
        "http://[v1.future]/",
        "http://[fe80::1%25eth0]/",
        "http://[::1]x/",
        "http://%FF.example/",
        "http://ex%zzample.com/",
        "http://" + "a" * 64 + ".ü.example/",
    ],
)
def test_what_is_not_an_http_url_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        canonicalize(url)


@pytest.mark.parametrize(
    ("reference", "base"),
    [
        ("mailto:x@example.com", "http://example.com/"),
        ("javascript:alert(1)", "http://example.com/"),
        ("data:image/png;base64,AAAA", "http://example.com/"),
        ("//[::1/x", "http://example.com/"),
        ("x", "mailto:x@example.com"),
    ],
)
def test_references_that_resolve_to_no_http_url_are_refused(reference: str, base: str) -> None:
    with pytest.raises(ValueError):
        canonicalize(reference, base)


@pytest.mark.parametrize(
    "variant",
    [
        "http://example.com/a/c~?q=1",
        "HTTP://EXAMPLE.COM/a/c~?q=1",
        "http://example.com:80/a/c~?q=1",
        "http://example.com./a/c~?q=1",
        "http://user@example.com/a/c~?q=1#top",
        "http://example.com/a/b/../c%7E?q=1",
        "http://example.com/./a/%63%7e?q=1",
        "http://ex%61mple.com/a/c~?%71=%31",
    ],
)
def test_equivalent_urls_share_one_key(variant: str) -> None:
    assert canonicalize(variant) == "http://example.com/a/c~?q=1"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("http://h/a%2Fb", "http://h/a/b"),
        ("http://h/?a=1&b=2", "http://h/?b=2&a=1"),
        ("http://h/?q=a+b", "http://h/?q=a%20b"),
        ("http://h/a", "http://h/a/"),
        ("http://h/", "https://h/"),
        ("http://h/%E9", "http://h/%C3%A9"),
    ],
)
def test_distinct_resources_keep_distinct_keys(first: str, second: str) -> None:
    assert canonicalize(first) != canonicalize(second)


def test_host_of_and_scope() -> None:
    assert host_of("HTTP://WWW.Example.com.:8080/x") == "www.example.com"
    assert host_of("http://[::1]:8080/") == "::1"
    with pytest.raises(ValueError):
        host_of("mailto:x@example.com")
    hosts = frozenset({"example.com", "xn--bcher-kva.de"})
    assert is_in_scope("https://example.com/a", hosts)
    assert is_in_scope("http://BÜCHER.de/", hosts)
    assert not is_in_scope("http://sub.example.com/", hosts)
    assert not is_in_scope("http://[::1/", hosts)


# Property tests: URLs assembled from awkward parts.

_LABEL = st.text(string.ascii_letters + string.digits + "-_éüß例", min_size=1, max_size=8)
_HOST = st.lists(_LABEL, min_size=1, max_size=3).map(".".join)
_TEXT = st.lists(
    st.sampled_from([*string.printable, "%", "%2F", "%7e", "%e9", "é", "\u00a0", "😀"])
    | st.characters(),
    max_size=30,
).map("".join)
_SEGMENT = st.sampled_from([".", "..", "", "%2E", "%2e%2E"]) | _TEXT.map(
    lambda text: text.replace("/", "").replace("?", "").replace("#", "")
)


@st.composite
def _urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "HTTP", "https", "HttpS"]))
    userinfo = draw(st.sampled_from(["", "user@", "u:p@"]))
    port = draw(st.sampled_from(["", ":80", ":443", ":8080", ":"]))
    path = "/".join(draw(st.lists(_SEGMENT, max_size=6)))
    query = draw(st.none() | _TEXT.map(lambda text: text.replace("#", "")))
    fragment = draw(st.none() | _TEXT)
    url = f"{scheme}://{userinfo}{draw(_HOST)}{port}/{path}"
    return (
        url + ("" if query is None else f"?{query}") + ("" if fragment is None else f"#{fragment}")
    )


_CANONICAL_CHARS = set(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?%")


@given(_urls())
def test_canonicalize_is_idempotent(url: str) -> None:
    try:
        key = canonicalize(url)
    except ValueError:
        assume(False)
        return
    assert canonicalize(key) == key
    assert set(key) <= _CANONICAL_CHARS
    assert "#" not in key and "/./" not in key and "/../" not in key


@given(_urls())
def test_the_host_of_a_canonical_url_is_read_off_it(url: str) -> None:
    """The frontier and the scope read a canonical URL's host without parsing it again."""
    try:
        key = canonicalize(url)
    except ValueError:
        assume(False)
        return
    assert host_of_canonical(key) == host_of(url)


@given(_urls(), st.sampled_from(["http://base.example/a/b?c", "https://b/"]), _TEXT)
def test_resolution_is_idempotent_too(url: str, base: str, reference: str) -> None:
    for candidate in (url, reference):
        try:
            key = canonicalize(candidate, base)
        except ValueError:
            continue
        assert canonicalize(key) == key
        assert canonicalize(key, base) == key


@given(st.text(max_size=60), st.text(max_size=30))
def test_canonicalize_raises_nothing_but_value_error(url: str, base: str) -> None:
    for attempt in ((url, None), (url, base), ("http://h/" + url, None)):
        with contextlib.suppress(ValueError):
            canonicalize(*attempt)


@given(st.text(string.ascii_letters + string.digits + "-._~", max_size=20))
def test_escaped_unreserved_characters_are_the_characters(text: str) -> None:
    escaped = "".join(f"%{ord(char):02x}" for char in text)
    assert canonicalize(f"http://h/{escaped}?{escaped}") == canonicalize(f"http://h/{text}?{text}")
