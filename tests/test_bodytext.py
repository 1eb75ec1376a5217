"""A body's kind and characters: HTML or CSS or neither, BOM, charset and declarations."""

from __future__ import annotations

import pytest

from harvester.crawl.bodytext import body_text

HREF = "<a href='é'>"


@pytest.mark.parametrize(
    ("body", "content_type", "text"),
    [
        # Labels mean what the WHATWG Encoding Standard says: latin1 and ascii are windows-1252.
        (b"<a href='\x80\xe9'>", "text/html; charset=ISO-8859-1", "<a href='€é'>"),
        (b"<a href='\x80'>", "text/html; charset=us-ascii", "<a href='€'>"),
        # A charset that is no label, or UTF-7 (which smuggles markup), is ignored.
        (b"<a href='+ADw-'>", "text/html; charset=utf-7", "<a href='+ADw-'>"),
        (b"<a href='\xe9'>", "text/html; charset='latin1'", "<a href='\ufffd'>"),
        # A byte order mark wins over everything, UTF-32 included.
        (b"\xef\xbb\xbf" + HREF.encode(), "text/html; charset=latin1", HREF),
        (HREF.encode("utf-32"), "text/html", HREF),
        # The header's UTF-16 without a BOM is little-endian, as the Encoding Standard has it.
        (HREF.encode("utf-16-le"), "text/html; charset=utf-16", HREF),
        # In the document: <meta charset>, or http-equiv=content-type, outside comments.
        (b"<meta charset=latin1><a href='\xe9'>", "text/html", "<meta charset=latin1>" + HREF),
        (
            b"<meta http-equiv=content-type content='text/html; charset=latin1'><a href='\xe9'>",
            "text/html",
            "<meta http-equiv=content-type content='text/html; charset=latin1'>" + HREF,
        ),
        (
            b"<meta content='text/html; charset=latin1'><a href='\xe9'>",
            "text/html",
            "<meta content='text/html; charset=latin1'><a href='\ufffd'>",
        ),
        (
            b"<!-- <meta charset=latin1> --><a href='\xe9'>",
            "text/html",
            "<!-- <meta charset=latin1> --><a href='\ufffd'>",
        ),
        # A document read far enough to find that it says UTF-16 is not UTF-16 (HTML §13.2.3.2).
        (b"<meta charset=utf-16>" + HREF.encode(), "text/html", "<meta charset=utf-16>" + HREF),
        # CSS: an @charset rule counts only at the very start.
        (b'@charset "latin1"; a{b:url(\xe9)}', "text/css", '@charset "latin1"; a{b:url(é)}'),
        (b'a{} @charset "latin1"; b{}\xe9', "text/css", 'a{} @charset "latin1"; b{}\ufffd'),
        (b'@charset "utf-16"; a{b:url(\xc3\xa9)}', "text/css", '@charset "utf-16"; a{b:url(é)}'),
    ],
)
def test_decoding(body: bytes, content_type: str, text: str) -> None:
    found = body_text(body, content_type)
    assert found is not None
    assert found.text == text


@pytest.mark.parametrize(
    ("body", "content_type", "kind"),
    [
        (b"<p>", "Text/HTML; charset=utf-8", "html"),
        (b"<p>", "application/xhtml+xml", "html"),
        (b"\n\t<!DOCTYPE html><p>", None, "html"),
        (b"\xef\xbb\xbf<html>", "", "html"),
        (b"a {}", "text/css", "css"),
        (b"<p>", "text/plain", None),
        (b"plain text", None, None),
        (b"<p>\x00", "text/html", None),  # binary
        (b"a {}\x00", "text/css; charset=latin1", None),
        ("<p>".encode("utf-16-be"), "text/html; charset=utf-16be", "html"),
        ("<p>".encode("utf-16"), "text/html", "html"),  # a BOM makes the NULs text
    ],
)
def test_kind(body: bytes, content_type: str | None, kind: str | None) -> None:
    found = body_text(body, content_type)
    assert (found.kind if found else None) == kind
