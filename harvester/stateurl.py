"""A state URL's form: ``sqlite:///PATH`` (one harvester per collection) or
``postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DB`` (a job many workers share).

Checking one is a string's business: the settings check ``--state`` here without loading a
storage implementation; :mod:`harvester.storage.registry` opens the one a URL names."""

from __future__ import annotations

from urllib.parse import urlsplit

from harvester.exceptions import StateURLError

SQLITE = "sqlite"
POSTGRES = "postgresql"
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
