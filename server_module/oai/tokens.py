"""Stateless, signed resumption tokens (§3.5) for the list verbs.

The token carries the whole state of a list request sequence (the "encode state in the
token" strategy of the implementation guidelines, §5.1), so the provider keeps no sessions and
tokens survive a restart. The state is a keyset position rather than an offset: the list is
ordered by (datestamp, identifier) and each page resumes after the last item delivered, so
records added or removed meanwhile never shift later pages. ``until`` is fixed when the list
starts, so items changed during the sequence wait for the next harvest (§3.5.1).

Wire format, base64url without padding::

    version (1 byte) | payload (compact JSON array) | HMAC-SHA256(version | payload)[:16]

:meth:`TokenCodec.decode` raises :class:`~server_module.oai.errors.BadResumptionToken`, and
nothing else, for anything it did not issue or that has expired.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from server_module.oai.dates import format_datestamp
from server_module.oai.errors import BadResumptionToken
from server_module.oai.request import MAX_TOKEN_LENGTH, OAIRequest

__all__ = ["MAX_TOKEN_LENGTH", "ListState", "TokenCodec"]

VERSION: Final = 1
_TAG_BYTES: Final = 16
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_VERB_CODES: Final = {"ListIdentifiers": "I", "ListRecords": "R", "ListSets": "S"}
_CODE_VERBS: Final = {code: verb for verb, code in _VERB_CODES.items()}

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ListState:
    """Where a list request sequence stands.

    ``from_`` and ``until`` are inclusive epoch bounds; ``until`` is never later than the
    time the list started. ``after`` is the (datestamp, identifier) of the last item
    delivered, ``None`` before the first page. ``cursor`` counts the items delivered before
    this page and ``total`` is the completeListSize computed at the first page. ``issued``
    is when this token was issued; it expires ``ttl`` seconds later.
    """

    verb: str
    metadata_prefix: str | None
    set_spec: str | None
    from_: int | None
    until: int
    after: tuple[int, str] | None
    cursor: int
    total: int
    issued: int

    @classmethod
    def from_request(cls, request: OAIRequest, *, now: int, total: int = 0) -> ListState:
        """The state before the first page of ``request``, bounded at ``now``.

        ``total`` is usually filled in afterwards with :func:`dataclasses.replace`, once the
        list has been counted within the bounds given here.
        """
        until = now if request.until is None else min(request.until, now)
        return cls(
            verb=request.verb,
            metadata_prefix=request.metadata_prefix,
            set_spec=request.set_spec,
            from_=request.from_,
            until=until,
            after=None,
            cursor=0,
            total=total,
            issued=now,
        )

    def advance(self, last: tuple[int, str], delivered: int, *, now: int) -> ListState:
        """The state after delivering ``delivered`` more items, the last of them ``last``."""
        return dataclasses.replace(self, after=last, cursor=self.cursor + delivered, issued=now)


class TokenCodec:
    """Turns a :class:`ListState` into an opaque token and back, checking its signature.

    ``secret`` should be 32 random bytes kept with the provider's configuration; the same
    secret decodes the same tokens after a restart. Tokens are valid for ``ttl`` seconds
    after they are issued, by ``clock``.
    """

    def __init__(
        self, secret: bytes, *, ttl: int = 86400, clock: Callable[[], float] = time.time
    ) -> None:
        if not secret:
            raise ValueError("the token secret must not be empty")
        self._secret = secret
        self.ttl = ttl
        self._clock = clock

    def encode(self, state: ListState) -> str:
        """The token for ``state``: URL-safe, at most :data:`MAX_TOKEN_LENGTH` characters.

        Raises :class:`ValueError` for a state that is not a list verb's, or too long to fit.
        """
        body = bytes([VERSION]) + _dump(state)
        token = _b64encode(body + self._tag(body))
        if len(token) > MAX_TOKEN_LENGTH:
            raise ValueError(f"the list state does not fit in {MAX_TOKEN_LENGTH} characters")
        return token

    def decode(self, token: str, *, verb: str | None = None) -> ListState:
        """The state in ``token``, if this repository issued it, unexpired, for ``verb``."""
        raw = _b64decode(token)
        body, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
        if body[0] != VERSION:
            raise BadResumptionToken("The resumptionToken is of an unknown version")
        if not hmac.compare_digest(tag, self._tag(body)):
            raise BadResumptionToken("The resumptionToken was not issued by this repository")
        state = _load(body[1:])
        if verb is not None and state.verb != verb:
            raise BadResumptionToken(f"The resumptionToken was issued for {state.verb}")
        if self.expires(state) < self._clock():
            expired = format_datestamp(self.expires(state))
            raise BadResumptionToken(f"The resumptionToken expired at {expired}")
        return state

    def expires(self, state: ListState) -> int:
        """When a token for ``state`` ceases to be valid: its ``expirationDate`` (§3.5)."""
        return state.issued + self.ttl

    def _tag(self, body: bytes) -> bytes:
        return hmac.new(self._secret, body, hashlib.sha256).digest()[:_TAG_BYTES]


def _dump(state: ListState) -> bytes:
    if state.verb not in _VERB_CODES:
        raise ValueError(f"not a list verb: {state.verb!r}")
    after_datestamp, after_identifier = state.after or (None, None)
    fields = [
        _VERB_CODES[state.verb],
        state.metadata_prefix,
        state.set_spec,
        state.from_,
        state.until,
        after_datestamp,
        after_identifier,
        state.cursor,
        state.total,
        state.issued,
    ]
    text = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def _load(payload: bytes) -> ListState:
    """The state in a signed payload; a malformed one means the secret signed garbage."""
    try:
        fields = json.loads(payload.decode("utf-8", "surrogatepass"))
        code, prefix, set_spec, from_, until, after_ds, after_id, cursor, total, issued = fields
        after = None if after_ds is None else (_int(after_ds), _str(after_id))
        return ListState(
            verb=_CODE_VERBS[code],
            metadata_prefix=_optional(_str, prefix),
            set_spec=_optional(_str, set_spec),
            from_=_optional(_int, from_),
            until=_int(until),
            after=after,
            cursor=_int(cursor),
            total=_int(total),
            issued=_int(issued),
        )
    except (ValueError, TypeError, KeyError) as error:
        raise BadResumptionToken("The resumptionToken is malformed") from error


def _int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _optional(check: Callable[[Any], T], value: Any) -> T | None:
    return None if value is None else check(value)


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(token: str) -> bytes:
    """The bytes of a canonical unpadded base64url token long enough to hold a tag."""
    if len(token) > MAX_TOKEN_LENGTH:
        raise BadResumptionToken(f"The resumptionToken is longer than {MAX_TOKEN_LENGTH}")
    if not _BASE64URL.fullmatch(token):
        raise BadResumptionToken("The resumptionToken is not base64url")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise BadResumptionToken("The resumptionToken is not base64url") from None
    # Unused low bits in the last character would let two spellings decode alike.
    if len(raw) < _TAG_BYTES + 2 or _b64encode(raw) != token:
        raise BadResumptionToken("The resumptionToken is truncated or malformed")
    return raw
