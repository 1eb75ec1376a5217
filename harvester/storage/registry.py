"""Which implementation of the state a URL names (its forms: :mod:`harvester.stateurl`): the
scheme picks the implementation."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from harvester.stateurl import POSTGRES, SQLITE, check_state_url
from harvester.storage.protocol import State
from harvester.storage.sqlite.state import open_sqlite

__all__ = ["OPENERS", "POSTGRES", "SQLITE", "check_state_url", "open_state"]


def _open_postgres(url: str) -> State:
    """PostgreSQL's state; psycopg (0.12 s to import) is loaded only for such a URL."""
    from harvester.storage.postgres.state import open_postgres

    return open_postgres(url)


OPENERS: dict[str, Callable[[str], State]] = {SQLITE: open_sqlite, POSTGRES: _open_postgres}


def open_state(url: str) -> State:
    """The state at ``url``, not opened yet (``with open_state(url) as state: ...``)."""
    check_state_url(url)
    return OPENERS[urlsplit(url).scheme](url)
