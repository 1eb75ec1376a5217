"""The URLs a style sheet refers to: ``url(...)`` and ``@import`` targets, found by one
regular expression over the text (comments and unrelated strings skipped) and unescaped as
CSS Syntax 3 says. :mod:`harvester.crawl.links` turns them into links of the page."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator

__all__ = ["css_urls"]


def _css_url_body(group: str) -> str:
    """The inside of ``url(...)``: a quoted string, or an unquoted run without parentheses."""
    return (
        rf"""\(\s*(?:"(?P<{group}d>(?:[^"\\\n]|\\.)*+)"|'(?P<{group}s>(?:[^'\\\n]|\\.)*+)'"""
        rf"""|(?P<{group}b>(?:[^\s()"'\\]|\\[0-9a-f]{{1,6}}\s?|\\.)*+))\s*\)"""
    )


# Matched against the text with its ASCII letters lower-cased (CSS keywords are
# case-insensitive) so that every branch starts with a literal and the scan stays fast.
_CSS_LINK = re.compile(
    r"/\*.*?(?:\*/|\Z)"  # a comment: skipped
    r"|@import\s*(?:url"
    + _css_url_body("import_url_")
    + r"""|"(?P<import_d>(?:[^"\\\n]|\\.)*+)"|'(?P<import_s>(?:[^'\\\n]|\\.)*+)')"""
    r"|u(?<![\w-]u)rl" + _css_url_body("url_") + r"""|"(?:[^"\\\n]|\\.)*+"|'(?:[^'\\\n]|\\.)*+'""",
    re.S,
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n]?|(\n)|(.))", re.S)


def css_urls(css: str) -> Iterator[tuple[str, str]]:
    """``url(...)`` and ``@import`` targets, outside comments and unrelated strings, each with
    its source (``css/import`` or ``css/url``).

    >>> css = "@import 'a.css'; /* url(no) */ p { content: 'url(no)'; background: URL(b\\\\ c) }"
    >>> list(css_urls(css))
    [('a.css', 'css/import'), ('b c', 'css/url')]
    """
    for match in _CSS_LINK.finditer(css.translate(_ASCII_LOWER)):
        group = match.lastgroup  # the one URL group that matched, if any
        if group is not None:
            value = _css_unescape(css[match.start(group) : match.end(group)])
            source = "css/import" if group.startswith("import_") else "css/url"
            yield value, source


def _css_unescape(text: str) -> str:
    r"""CSS escapes resolved (CSS Syntax 3 §4.3.7).

    >>> _css_unescape(r"a\28 b\)c\\d\0")
    'a(b)c\\d�'
    """
    return _CSS_ESCAPE.sub(_css_escaped, text) if "\\" in text else text


def _css_escaped(match: re.Match[str]) -> str:
    hex_digits, newline, char = match.groups()
    if hex_digits is None:
        return "" if newline else char
    code = int(hex_digits, 16)
    valid = 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF
    return chr(code) if valid else "\ufffd"
