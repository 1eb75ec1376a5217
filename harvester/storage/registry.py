"""Which implementation of the state a URL names: ``sqlite:///PATH`` (one harvester per
collection) or ``postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DB`` (a job many workers share).

The scheme picks the implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from harvester.exceptions import StateURLError
from harvester.storage.protocol import State
from harvester.storage.sqlite.state import SCHEME as SQLITE
from harvester.storage.sqlite.state import open_sqlite

POSTGRES = "postgresql"


def _open_postgres(url: str) -> State:
    """PostgreSQL's state; psycopg (0.12 s to import) is loaded only for such a URL."""
    from harvester.storage.postgres.state import open_postgres

    return open_postgres(url)


OPENERS: dict[str, Callable[[str], State]] = {SQLITE: open_sqlite, POSTGRES: _open_postgres}
FORMS = {SQLITE: "sqlite:///PATH", POSTGRES: "postgresql://USER@HOST/DB"}


def check_state_url(url: str) -> None:
    """:class:`StateURLError` naming ``url`` and the supported forms, unless one fits.

    >>> check_state_url("pg://db/a")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    harvester.exceptions.StateURLError: state URL 'pg://db/a' is not supported; use ...
    """
    parts = urlsplit(url)
    if parts.scheme == POSTGRES and parts.path.strip("/"):
        return  # a database named; libpq reads the rest
    if parts.scheme != SQLITE or not url.startswith(f"{SQLITE}:///") or url == f"{SQLITE}:///":
        forms = ", ".join(FORMS.values())
        raise StateURLError(f"state URL {url!r} is not supported; use {forms}")


def open_state(url: str) -> State:
    """The state at ``url``, not opened yet (``with open_state(url) as state: ...``)."""
    check_state_url(url)
    return OPENERS[urlsplit(url).scheme](url)
