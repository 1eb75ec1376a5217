"""The guard of a resumption loop (OAI-PMH 2.0 §3.5): a list that does not end is an error.

A provider's resumptionTokens are its own, so only what they bring back can be judged. One
:class:`ListGuard` watches one list, page by page, and stops it with a
:class:`~harvester.exceptions.ProtocolError` naming the page's URL when:

- a page hands out a token used before in this list (``A, B, A``): it would fetch a page seen
  before, forever;
- ``STALLED_PAGES`` pages in a row bring no identifier new to this list (the same records
  again, or none) and still hand out a token;
- a list still handing out a token has listed more than ``SIZE_FACTOR`` times its declared
  ``completeListSize`` plus ``SIZE_SLACK`` headers (the size may be an estimate, §3.5, hence
  the wide margin).

The identifiers are remembered as hashes (one int each) for the life of the list.
"""

from __future__ import annotations

from collections.abc import Iterable

from harvester.exceptions import ProtocolError

STALLED_PAGES = 10
SIZE_FACTOR = 2
SIZE_SLACK = 1000


class ListGuard:
    def __init__(self) -> None:
        self._tokens: set[str] = set()
        self._identifiers: set[int] = set()
        self._listed = 0
        self._stalled = 0

    def check(
        self, url: str, identifiers: Iterable[str], token: str | None, size: int | None
    ) -> None:
        """Judge one page: its identifiers, the token it hands out and its completeListSize.

        >>> guard = ListGuard()
        >>> guard.check("u1", ["a", "b"], "A", None)
        >>> guard.check("u2", ["c"], "A", None)
        Traceback (most recent call last):
        ...
        harvester.exceptions.ProtocolError: u2: resumptionToken 'A' was used before in this list
        """
        if token is not None and token in self._tokens:
            raise ProtocolError(f"{url}: resumptionToken {token!r} was used before in this list")
        before = len(self._identifiers)
        for identifier in identifiers:
            self._identifiers.add(hash(identifier))
            self._listed += 1
        self._stalled = 0 if len(self._identifiers) > before else self._stalled + 1
        if token is None:
            return
        if self._stalled >= STALLED_PAGES:
            raise ProtocolError(
                f"{url}: {self._stalled} pages in a row listed no new identifier"
                " but the list goes on"
            )
        if size is not None and self._listed > SIZE_FACTOR * size + SIZE_SLACK:
            raise ProtocolError(
                f"{url}: {self._listed} headers listed, far past the completeListSize {size}"
            )
        self._tokens.add(token)
