"""Record headers as rendered for ListIdentifiers: the page-at-once path and its escaping."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coop_common.xmltext import is_plain, text
from server_module.oai.render import Envelope, document, document_parts, header, headers

# Percent-encoded URLs, as the index makes them, and anything a row could hold besides.
URLS = st.from_regex(r"http://h/[A-Za-z0-9%/._~-]{0,30}", fullmatch=True)
IDENTIFIERS = st.one_of(URLS, st.text())
ROWS = st.lists(
    st.tuples(
        IDENTIFIERS,
        st.integers(0, 2**34),
        st.integers(0, 1),
        st.sampled_from(["text/html", "image/png", "application/x-a&b"]),
    ),
    max_size=20,
)


@given(ROWS)
def test_a_page_of_headers_is_each_header_in_order(rows: list[tuple[str, int, int, str]]) -> None:
    assert headers(rows) == [header(*row) for row in rows]


@given(st.text())
def test_plain_text_needs_no_escaping(value: str) -> None:
    if is_plain(value):
        assert text(value) == value


def test_header() -> None:
    assert header("http://h/a&b", 0, 1, "text/html") == (
        '<header status="deleted"><identifier>http://h/a&amp;b</identifier>'
        "<datestamp>1970-01-01T00:00:00Z</datestamp>"
        "<setSpec>text</setSpec><setSpec>text:html</setSpec></header>"
    )


def test_one_identifier_to_escape_escapes_it_alone() -> None:
    page = headers([("http://h/a", 0, 0, "text/html"), ("http://h/<b>", 0, 0, "text/html")])
    assert "<identifier>http://h/a</identifier>" in page[0]
    assert "<identifier>http://h/&lt;b&gt;</identifier>" in page[1]


def test_a_document_in_parts_passes_each_bytes_part_on_as_it_is() -> None:
    env = Envelope(1_900_000_000, "http://e.org/oai", "/oai/oai2.xsl")
    kept = "<header>\u00e9</header>".encode()
    body: list[str | bytes] = [
        "<ListIdentifiers>",
        kept,
        "<resumptionToken/>",
        "</ListIdentifiers>",
    ]
    parts = document_parts(env, [("verb", "ListIdentifiers")], body)
    assert len(parts) == 3 and parts[1] is kept
    assert parts[2] == b"<resumptionToken/></ListIdentifiers></OAI-PMH>\n"
    whole = document(
        env, [("verb", "ListIdentifiers")], "".join([body[0], kept.decode(), *body[2:]])
    )
    assert b"".join(parts) == whole
