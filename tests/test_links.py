"""Link extraction from headers, HTML and CSS, including hostile bodies."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.crawl.links import MAX_BODY_BYTES, Link, extract_links

BASE = "http://example.com/dir/page.html"
ROOT, DIR = "http://example.com/", "http://example.com/dir/"


def urls(
    body: str | bytes, content_type: str | None = "text/html", *, max_bytes: int = MAX_BODY_BYTES
) -> list[str]:
    data = body.encode() if isinstance(body, str) else body
    return [link.url for link in extract_links(data, BASE, content_type, max_bytes=max_bytes)]


def only(body: str, content_type: str = "text/html") -> Link:
    links = extract_links(body.encode(), BASE, content_type)
    assert len(links) == 1, links
    return links[0]


@pytest.mark.parametrize(
    ("html", "url", "source", "embed"),
    [
        ('<a href="a.html">', DIR + "a.html", "a/href", False),
        ('<map><area href="/area">', ROOT + "area", "area/href", False),
        ('<link rel="stylesheet" href="s.css">', DIR + "s.css", "link/href", True),
        ('<link rel="icon" href="/favicon.ico">', ROOT + "favicon.ico", "link/href", True),
        ('<link rel="preload" href="f.woff2">', DIR + "f.woff2", "link/href", True),
        ('<link rel="canonical" href="/c">', ROOT + "c", "link/href", False),
        ('<link rel="alternate" href="feed.xml">', DIR + "feed.xml", "link/href", False),
        ('<img src="i.png">', DIR + "i.png", "img/src", True),
        (
            '<script src="//cdn.example.org/s.js"></script>',
            "http://cdn.example.org/s.js",
            "script/src",
            True,
        ),
        ('<iframe src="f.html"></iframe>', DIR + "f.html", "iframe/src", True),
        ('<frameset><frame src="fr.html"></frameset>', DIR + "fr.html", "frame/src", True),
        ('<embed src="e.swf">', DIR + "e.swf", "embed/src", True),
        ('<object data="o.pdf"></object>', DIR + "o.pdf", "object/data", True),
        ('<video><source src="v.webm"></video>', DIR + "v.webm", "source/src", True),
        ('<video src="v.mp4"></video>', DIR + "v.mp4", "video/src", True),
        ('<video poster="p.jpg"></video>', DIR + "p.jpg", "video/poster", True),
        ('<audio src="a.mp3"></audio>', DIR + "a.mp3", "audio/src", True),
        ('<video><track src="t.vtt"></video>', DIR + "t.vtt", "track/src", True),
        ('<img srcset="s.png 2x">', DIR + "s.png", "img/srcset", True),
        ('<picture><source srcset="w.webp"></picture>', DIR + "w.webp", "source/srcset", True),
        (
            '<meta http-equiv="refresh" content="0; url=/next">',
            ROOT + "next",
            "meta/refresh",
            False,
        ),
        ("<style>p { background: url(bg.png) }</style>", DIR + "bg.png", "css/url", True),
        ('<p style="background: url(bg.png)">', DIR + "bg.png", "css/url", True),
    ],
)
def test_each_element_and_attribute(html: str, url: str, source: str, embed: bool) -> None:
    assert only(html) == Link(url, source, nofollow=False, embed=embed)


def test_links_come_in_document_order_and_canonical() -> None:
    html = """<html><head><link rel=stylesheet href="S.css"><script src="../js/app.js"></script>
    </head><body><a href="HTTP://Example.COM:80/x/./y/../z%7e#frag">z</a><img src="i.png">
    <a href="https://other.example/"></a></body></html>"""
    assert urls(html) == [
        "http://example.com/dir/S.css",
        "http://example.com/js/app.js",
        "http://example.com/x/z~",
        "http://example.com/dir/i.png",
        "https://other.example/",
    ]


def test_a_link_with_a_style_gives_both_and_an_anchor_without_href_none() -> None:
    html = '<a name="top"></a><a href="p.html" style="background: url(bg.png)">p</a>'
    assert extract_links(html.encode(), BASE, "text/html") == [
        Link("http://example.com/dir/p.html", "a/href"),
        Link("http://example.com/dir/bg.png", "css/url", embed=True),
    ]


def test_duplicates_keep_their_first_occurrence() -> None:
    html = '<img src="x.png"><a href="x.png#a">x</a><a href="./x.png">x</a><a href="y">y</a>'
    assert extract_links(html.encode(), BASE, "text/html") == [
        Link("http://example.com/dir/x.png", "img/src", embed=True),
        Link("http://example.com/dir/y", "a/href"),
    ]


@pytest.mark.parametrize(
    "href",
    [
        "javascript:void(0)",
        "JavaScript:alert(1)",
        "mailto:someone@example.com",
        "tel:+31201234567",
        "data:text/html,<a>",
        "ftp://example.com/file",
        "http://[::1/",
        "http://exa mple.com/",
        "http://example.com:99999/",
        "",
        "   ",
    ],
)
def test_what_is_no_http_url_is_skipped(href: str) -> None:
    assert urls(f'<a href="{href}">x</a><a href="ok">ok</a>') == ["http://example.com/dir/ok"]


def test_the_first_base_is_the_base_for_what_follows() -> None:
    html = """<html><head><link rel=icon href="before.ico">
    <base href="http://static.example.com/root/"><base href="/ignored/"></head>
    <body><a href="a">a</a><img src="/abs.png"></body></html>"""
    assert urls(html) == [
        "http://example.com/dir/before.ico",
        "http://static.example.com/root/a",
        "http://static.example.com/abs.png",
    ]


def test_a_relative_base_resolves_against_the_page() -> None:
    assert urls('<base href="../other/"><a href="a">') == ["http://example.com/other/a"]


@pytest.mark.parametrize(
    "base", ['<base href="javascript:x">', '<base target="_blank">', '<base href="mailto:x@y">']
)
def test_a_useless_base_leaves_the_page_url(base: str) -> None:
    assert urls(f'{base}<a href="a">') == ["http://example.com/dir/a"]


@pytest.mark.parametrize(
    ("srcset", "expected"),
    [
        ("a.png", ["a.png"]),
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("a.png 480w,b.png 800w", ["a.png", "b.png"]),
        ("  a.png   1.5x ,\n b.png  ", ["a.png", "b.png"]),
        ("a.png,b.png", ["a.png,b.png"]),  # as in browsers: no space, so one URL
        ("a.png,, ,b.png", ["a.png", "b.png"]),
        ("img,with,commas.png 2x, b.png", ["img,with,commas.png", "b.png"]),
        ("a.png (weird, descriptor), b.png 2x", ["a.png", "b.png"]),
        ("data:image/png;base64,AAAA 1x, b.png 2x", ["b.png"]),
        ("", []),
        (" , ", []),
    ],
)
def test_srcset(srcset: str, expected: list[str]) -> None:
    html = f'<img srcset="{srcset}">'
    assert urls(html) == [f"http://example.com/dir/{name}" for name in expected]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0; url=/next", "http://example.com/next"),
        ("5;URL=next", "http://example.com/dir/next"),
        ("5 ; url = 'next' ", "http://example.com/dir/next"),
        ('0;url="next"', "http://example.com/dir/next"),
        ("0, url=next", "http://example.com/dir/next"),
        ("0 next", "http://example.com/dir/next"),
        ("0;next", "http://example.com/dir/next"),
        ("1.5; url=next", "http://example.com/dir/next"),
        ("0; url='next'trailing", "http://example.com/dir/next"),
        ("0; url=http://other.example/?a=1;b=2", "http://other.example/?a=1;b=2"),
        ("0; url=", None),
        ("5", None),
        ("", None),
        ("url=next", None),
        ("soon; url=next", None),
    ],
)
def test_meta_refresh(content: str, expected: str | None) -> None:
    escaped = content.replace('"', "&quot;")
    html = f'<meta http-equiv="Refresh" content="{escaped}">'
    assert urls(html) == ([] if expected is None else [expected])


def test_meta_without_refresh_is_no_link() -> None:
    assert urls('<meta name="refresh" content="0; url=x"><meta content="0; url=y">') == []


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        ("p { background: url(a.png) }", ["a.png"]),
        ("p { background: url( 'a b.png' ) }", ["a%20b.png"]),
        ('p { background: URL("a.png") }', ["a.png"]),
        ('p { background: url("a\\".png") }', ["a%22.png"]),
        ("p { background: url(a\\(1\\).png) }", ["a(1).png"]),
        ("p { background: url(\\61 .png) }", ["a.png"]),
        ('@import "i.css";', ["i.css"]),
        ("@import 'i.css' screen;", ["i.css"]),
        ("@import url(i.css);", ["i.css"]),
        ('@IMPORT url("i.css") print;', ["i.css"]),
        ("@font-face { src: url(f.woff2) format('woff2'), url(f.woff) }", ["f.woff2", "f.woff"]),
        ("/* url(commented.png) */ p { color: red }", []),
        ("p::before { content: 'url(not-a-link)' }", []),
        ("p { background: myurl(x.png) }", []),
        ("p { background: url() }", []),
        ("p { background: url(data:image/png;base64,AAAA) }", []),
        ("p { background: url(unterminated", []),
    ],
)
def test_css_urls(css: str, expected: list[str]) -> None:
    assert urls(css, "text/css") == [f"http://example.com/dir/{name}" for name in expected]


def test_css_sources_say_import_or_url() -> None:
    links = extract_links(b"@import 'i.css'; a { b: url(u.png) }", BASE, "text/css; charset=utf-8")
    assert [(link.source, link.embed) for link in links] == [
        ("css/import", True),
        ("css/url", True),
    ]


def test_css_in_all_three_places() -> None:
    html = """<html><head><style>@import "imported.css"; body { background: url(bg.png) }</style>
    </head><body><div style="background-image: url('div.png')">x</div></body></html>"""
    assert urls(html) == [
        "http://example.com/dir/imported.css",
        "http://example.com/dir/bg.png",
        "http://example.com/dir/div.png",
    ]
    assert urls("@import 'sheet.css';", "text/css") == ["http://example.com/dir/sheet.css"]


def test_css_in_html_uses_the_document_base() -> None:
    html = '<base href="/assets/"><style>p { background: url(bg.png) }</style>'
    assert urls(html) == ["http://example.com/assets/bg.png"]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ([("Location", "/moved")], [Link("http://example.com/moved", "header/location")]),
        (
            [("location", "other.html")],
            [Link("http://example.com/dir/other.html", "header/location")],
        ),
        ([("Refresh", "3; url=/later")], [Link("http://example.com/later", "header/refresh")]),
        ([("Link", "</next>; rel=next")], [Link("http://example.com/next", "header/link")]),
        (
            [
                (
                    "Link",
                    '</s.css>; rel="stylesheet", '
                    "<https://cdn.example/f.woff2>; rel=preload; as=font",
                )
            ],
            [
                Link("http://example.com/s.css", "header/link", embed=True),
                Link("https://cdn.example/f.woff2", "header/link", embed=True),
            ],
        ),
        (
            [("LINK", '<a,b>; title="x, <y>"; rel="alternate nofollow", <c>')],
            [
                Link("http://example.com/dir/a,b", "header/link", nofollow=True),
                Link("http://example.com/dir/c", "header/link"),
            ],
        ),
        ([("Link", "<https://cdn.example>; rel=preconnect")], []),
        (
            [("Link", "</x>; rel=next; rel=stylesheet")],
            [Link("http://example.com/x", "header/link")],
        ),
        ([("Link", "no angle brackets; rel=next")], []),
        ([("Location", "mailto:x@example.com")], []),
        ([("Content-Location", "/elsewhere")], []),
    ],
)
def test_headers(headers: list[tuple[str, str]], expected: list[Link]) -> None:
    assert extract_links(b"", BASE, None, headers) == expected


ROOT = "http://example.com/"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # several links in one field, spaced or not, and several fields
        (
            ["</a>; rel=next,</b>;rel=prev , <c>", "</d>; rel=stylesheet"],
            [("a", False, False), ("b", False, False), ("c", False, False), ("d", False, True)],
        ),
        # commas, semicolons and angle brackets inside quoted strings and inside the URI
        (
            '</a>; title="x, <y>; z"; rel=stylesheet, </b>',
            [("a", False, True), ("b", False, False)],
        ),
        (
            r'</a>; title="say \"hi, <there>\""; rel=nofollow, </b>',
            [("a", True, False), ("b", False, False)],
        ),
        ("</a;b,c>; rel=next", [("a;b,c", False, False)]),
        # no rel, an empty rel, a rel only inside another parameter's value
        ("</a>", [("a", False, False)]),
        ('</a>; rel=""', [("a", False, False)]),
        ('</a>; title="rel=stylesheet"', [("a", False, False)]),
        # names are case-insensitive; the first rel counts; a parameter may lack a value
        ("</a>; REL=StyleSheet", [("a", False, True)]),
        ("</a>; rel=stylesheet; rel=nofollow", [("a", False, True)]),
        ('</a>; crossorigin; anchor="#x"; rel="preload nofollow"', [("a", True, True)]),
        # an origin to connect to is no link, unless another relation makes it one
        ('</a>; rel="preconnect dns-prefetch", </b>; rel="preconnect next"', [("b", False, False)]),
        # not a link-value at all
        ("rel=next", []),
        ("", []),
    ],
)
def test_awkward_link_headers(
    fields: list[str] | str, expected: list[tuple[str, bool, bool]]
) -> None:
    headers = [("Link", field) for field in ([fields] if isinstance(fields, str) else fields)]
    assert extract_links(b"", ROOT, None, headers) == [
        Link(ROOT + path, "header/link", nofollow, embed) for path, nofollow, embed in expected
    ]


def test_header_links_come_before_body_links() -> None:
    links = extract_links(b'<a href="/b">', BASE, "text/html", [("Link", "</h>; rel=next")])
    assert [link.url for link in links] == ["http://example.com/h", "http://example.com/b"]


NOFOLLOW_PAGE = b"""<a href="/followed">f</a><a href="/nofollow" rel="nofollow">n</a>
<a href="/both" rel="NoFollow external">b</a><a href="/both">b</a>
<area href="/area" rel="nofollow"><link rel="stylesheet nofollow" href="/s.css">"""


def test_nofollow_is_marked_when_followed() -> None:
    links = extract_links(NOFOLLOW_PAGE, BASE, "text/html")
    assert [(link.url, link.nofollow) for link in links] == [
        ("http://example.com/followed", False),
        ("http://example.com/nofollow", True),
        ("http://example.com/both", True),
        ("http://example.com/area", True),
        ("http://example.com/s.css", True),
    ]


def test_nofollow_links_are_omitted_on_request() -> None:
    headers = [("Link", "</h1>; rel=nofollow, </h2>")]
    links = extract_links(NOFOLLOW_PAGE, BASE, "text/html", headers, follow_nofollow=False)
    assert [(link.url, link.nofollow) for link in links] == [
        ("http://example.com/h2", False),
        ("http://example.com/followed", False),
        ("http://example.com/both", False),  # also linked without nofollow
    ]


@pytest.mark.parametrize(
    "content_type",
    ["text/html", "text/html; charset=utf-8", "TEXT/HTML", "application/xhtml+xml", None],
)
def test_html_types(content_type: str | None) -> None:
    assert urls('<!DOCTYPE html><a href="a">', content_type) == ["http://example.com/dir/a"]


@pytest.mark.parametrize(
    "content_type", ["image/png", "application/octet-stream", "text/plain", "application/json"]
)
def test_other_types_have_no_body_links(content_type: str) -> None:
    assert urls('<!DOCTYPE html><a href="a">', content_type) == []


def test_an_untyped_body_that_is_not_html_has_no_links() -> None:
    assert urls('{"href": "<a href=x>"}', None) == []


def test_an_xml_declaration_does_not_stop_the_parse() -> None:
    xhtml = '<?xml version="1.0" encoding="utf-8"?><html><body><a href="a">a</a></body></html>'
    assert urls(xhtml, "application/xhtml+xml") == ["http://example.com/dir/a"]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("<a href='café'>".encode("latin-1"), "text/html; charset=ISO-8859-1"),
        ("<meta charset=latin1><a href='café'>".encode("latin-1"), "text/html"),
        ("<a href='café'>".encode(), "text/html"),
        ("<a href='café'>".encode(), "text/html; charset=no-such-charset"),
        (b"\xef\xbb\xbf" + "<a href='café'>".encode(), "text/html; charset=latin1"),
        ("<a href='café'>".encode("utf-16"), "text/html"),
        ("<a href='café'>".encode("utf-16-le"), "text/html; charset=utf-16le"),
    ],
)
def test_decoding(body: bytes, content_type: str) -> None:
    assert urls(body, content_type) == ["http://example.com/dir/caf%C3%A9"]


def test_undecodable_bytes_do_not_stop_extraction() -> None:
    assert urls(b"<a href='\xff\xfe'></a><a href='ok'>", "text/html") == [
        "http://example.com/dir/%EF%BF%BD%EF%BF%BD",
        "http://example.com/dir/ok",
    ]


@pytest.mark.parametrize(
    "body",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR<a href='x'>",
        b"GIF89a\x01\x00\x01\x00\x00\xff\x00<a href='x'>",
        b"PK\x03\x04\x14\x00\x00\x00<a href='x'>",
        bytes(range(256)) * 100,
        b"",
        b"\x00",
    ],
)
def test_binary_served_as_html_has_no_links(body: bytes) -> None:
    assert urls(body, "text/html") == []
    assert urls(body, "text/css") == []


def test_garbage_without_nuls_is_tolerated() -> None:
    garbage = bytes(range(1, 256)) * 50 + b"<a href='found'>" + bytes(range(255, 0, -1)) * 50
    assert "http://example.com/dir/found" in urls(garbage, "text/html")


def test_broken_markup_is_tolerated() -> None:
    html = "<a href=a1><<a href='a2'<div><p><a href=\"a3\" href='dup'><img src=x.png <a href=z>"
    assert urls(html)[:3] == [
        "http://example.com/dir/a1",
        "http://example.com/dir/a2",
        "http://example.com/dir/a3",
    ]


def test_deeply_nested_markup_is_read_past_depth_256() -> None:
    assert urls("<div>" * 1000 + '<a href="deep">') == ["http://example.com/dir/deep"]


def _realistic_html(size: int) -> bytes:
    """Posts with a link per 300-odd bytes, about the density of a real listing or article."""
    post = (
        '<div class="post"><h2><a href="/post/{n}">Post {n}</a></h2><p>Lorem ipsum dolor sit'
        " amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore"
        ' magna aliqua. Ut enim ad <a href="https://example.org/ref/{n}">minim</a> veniam, quis'
        " nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.</p><p>Duis"
        " aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla"
        " pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia"
        " deserunt mollit anim id est laborum. Sed ut perspiciatis unde omnis iste natus error sit"
        " voluptatem accusantium doloremque laudantium, totam rem aperiam, eaque ipsa quae ab illo"
        ' inventore veritatis.</p><img src="/img/{n}.jpg" alt="" width="640" height="480"></div>\n'
    )
    return "".join(post.format(n=n) for n in range(size // len(post) + 1)).encode()[:size]


def test_a_huge_body_is_read_only_up_to_the_bound() -> None:
    body = _realistic_html(20 * 1024 * 1024)
    started = time.process_time()  # CPU time: the two shared cores may be busy with others
    links = extract_links(body, BASE, "text/html")
    assert time.process_time() - started < 1.0
    assert links == extract_links(body[:MAX_BODY_BYTES], BASE, "text/html")
    assert len(links) > 15_000


def test_the_bound_can_be_set() -> None:
    body = b'<a href="/early">' + b" " * 1000 + b'<a href="/late">'
    assert urls(body, max_bytes=500) == ["http://example.com/early"]


@pytest.mark.parametrize(
    "body",
    [
        b"<" * (6 * 1024 * 1024),
        b"<a href=" * (1024 * 1024),
        b"<div>" * (1024 * 1024),
        b"url(" * (1024 * 1024),
        b"a" * (20 * 1024 * 1024),
    ],
)
@pytest.mark.parametrize("content_type", ["text/html", "text/css"])
def test_pathological_bodies_finish(body: bytes, content_type: str) -> None:
    started = time.process_time()
    extract_links(body, BASE, content_type)
    assert time.process_time() - started < 3.0


_HEADER_NAMES = st.sampled_from(["Location", "Link", "Refresh", "Content-Type", "link"])


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=2000) | st.text(max_size=500).map(str.encode),
    st.sampled_from(
        ["text/html", "text/css", "application/xhtml+xml", None, "text/html; charset=x"]
    ),
    st.lists(st.tuples(_HEADER_NAMES, st.text(max_size=80)), max_size=3),
    st.booleans(),
)
def test_extraction_never_raises(
    body: bytes, content_type: str | None, headers: list[tuple[str, str]], follow: bool
) -> None:
    links = extract_links(body, BASE, content_type, headers, follow_nofollow=follow)
    assert len({link.url for link in links}) == len(links)
    assert all(link.url.startswith(("http://", "https://")) for link in links)


_FRAGMENTS = st.sampled_from(
    [
        "<a href=",
        "<img srcset='",
        "<link rel=nofollow href=",
        "<base href=",
        "<meta http-equiv=refresh content='0;url=",
        "<style>",
        " style='background:url(",
        "url(",
        "@import '",
        "'",
        '"',
        ">",
        "\\",
        "/*",
        "//",
        "%",
        "[::1",
        "javascript:",
        "http://",
        "é",
        "\x00",
        " ",
        ",",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS | st.text(max_size=5), max_size=40).map("".join))
def test_extraction_never_raises_on_link_shaped_junk(markup: str) -> None:
    for content_type in ("text/html", "text/css"):
        for link in extract_links(markup.encode(), BASE, content_type):
            assert link.url.startswith(("http://", "https://"))


_REFERENCES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["../a", "./b", ".", "..", "//x/y", "?q", "#f", "g?y#z", "http:g", "/abs"]),
    st.sampled_from(["\x1b", " \t?x", ";x", "x:y", "\n#top", "a b/../c"]),
)
_BASES = st.sampled_from(
    ["http://h/", "http://h/a/b.html?x=/y", "https://h:8443/a/", "http://h/a?q#f", "http://h"]
)


@given(_REFERENCES, _BASES)
def test_links_resolved_per_directory_are_resolved_as_against_the_page(ref: str, base: str) -> None:
    """A link's canonical URL is kept per (reference, base directory) across pages; that
    key must give what resolving against the page itself gives."""
    from harvester.crawl.links import _canonical_in, _canonical_or_none, _canonical_uncached

    _canonical_in.cache_clear()
    for _twice in range(2):
        assert _canonical_or_none(ref, base) == (
            _canonical_uncached(ref, base) if ref.strip() else None
        )
