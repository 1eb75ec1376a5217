"""Which implementation of the state a URL names: ``sqlite:///PATH`` today.

The scheme picks the implementation; a later one (``postgresql://``) registers here.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from harvester.exceptions import StateURLError
from harvester.storage.protocol import State
from harvester.storage.sqlite.state import SCHEME as SQLITE
from harvester.storage.sqlite.state import open_sqlite

OPENERS: dict[str, Callable[[str], State]] = {SQLITE: open_sqlite}
FORMS = {SQLITE: "sqlite:///PATH"}


def check_state_url(url: str) -> None:
    """:class:`StateURLError` naming ``url`` and the supported forms, unless one fits.

    >>> check_state_url("postgresql://db/archive")
    Traceback (most recent call last):
    harvester.exceptions.StateURLError: state URL 'postgresql://db/archive' is not supported; use sqlite:///PATH
    """
    scheme = urlsplit(url).scheme
    if scheme not in OPENERS or not url.startswith(f"{scheme}:///") or url == f"{scheme}:///":
        forms = ", ".join(FORMS.values())
        raise StateURLError(f"state URL {url!r} is not supported; use {forms}")


def open_state(url: str) -> State:
    """The state at ``url``, not opened yet (``with open_state(url) as state: ...``)."""
    check_state_url(url)
    return OPENERS[urlsplit(url).scheme](url)
