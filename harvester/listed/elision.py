"""Elision: an ``oai_didl`` list page kept once, the bytes it carries by value kept by reference.

A ListRecords page in ``oai_didl`` carries each file base64-encoded in a ``didl:Resource``,
and strategy ``didl`` archives each of those files as a record of its own. Kept as received,
the page would hold every such byte a second time, a third larger. :func:`elide` replaces
each carried file's base64 text in the page's payload by the WARC-Record-ID of the record
holding its decoded bytes (``urn:uuid:…``, without the angle brackets, so the XML stays well
formed) and says what it replaced (an :class:`Elision` each: where the reference is, how long
the base64 text was, which record); :func:`rebuild` puts the base64 back, which gives the
payload as received, byte for byte.

A span is elided only when it is exactly ``base64.b64encode`` of the record's bytes, found in
order in the payload as the whole text of an element (between ``>`` and ``<``). Anything else
(a character reference, a line break, a non-canonical last quantum, another encoding than
ASCII's) stays as received. Sans-IO: bytes in, bytes out.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Carried", "Elision", "digest", "elide", "rebuild", "reference"]

_HEAD = 64  # bytes of a base64 text searched for before the whole is compared
_GT = ord(">")


@dataclass(frozen=True)
class Carried:
    """One resource a page carries: its base64 text as parsed, its bytes, and the
    WARC-Record-ID (``<urn:uuid:…>``) and WARC-Payload-Digest of the record holding them."""

    encoded: bytes
    body: bytes
    record_id: str
    digest: str  # sha1:BASE32, as in WARC-Payload-Digest


@dataclass(frozen=True)
class Elision:
    """One span replaced: the reference starts at ``offset`` of the elided payload and stands
    for ``length`` bytes of base64 text, the encoding of record ``record_id``'s payload,
    whose digest is ``digest``."""

    offset: int
    length: int
    record_id: str
    digest: str

    def field(self) -> str:
        """As a ``warc-fields`` value: ``OFFSET LENGTH <urn:uuid:…> sha1:…``."""
        return f"{self.offset} {self.length} {self.record_id} {self.digest}"

    @classmethod
    def parse(cls, value: str) -> Elision:
        """The inverse of :meth:`field`; ``ValueError`` for anything else.

        >>> Elision.parse("12 8 <urn:uuid:1> sha1:AB")
        Elision(offset=12, length=8, record_id='<urn:uuid:1>', digest='sha1:AB')
        """
        offset, length, record_id, digest = value.split(" ")
        if not (record_id.startswith("<") and record_id.endswith(">")):
            raise ValueError(f"not a WARC-Record-ID: {record_id!r}")
        return cls(int(offset), int(length), record_id, digest)


def reference(record_id: str) -> bytes:
    """The text that stands for a record's base64 in an elided payload.

    >>> reference("<urn:uuid:1>")
    b'urn:uuid:1'
    """
    return record_id.strip("<>").encode("ascii")


def elide(payload: bytes, carried: Sequence[Carried]) -> tuple[bytes, list[Elision]]:
    """``payload`` with each carried resource's base64 text, in order, replaced by a
    reference to its record, and the elisions made (none: ``payload`` itself)."""
    view = memoryview(payload)
    parts: list[bytes | memoryview] = []
    elisions: list[Elision] = []
    position = written = 0
    for item in carried:
        at = _span(view, item, position)
        if at < 0:
            continue
        ref = reference(item.record_id)
        parts += [view[position:at], ref]
        written += at - position
        elisions.append(Elision(written, len(item.encoded), item.record_id, item.digest))
        written += len(ref)
        position = at + len(item.encoded)
    if not elisions:
        return payload, []
    parts.append(view[position:])
    return b"".join(parts), elisions


def rebuild(elided: bytes, elisions: Sequence[Elision], body_of: Callable[[str], bytes]) -> bytes:
    """The payload as received: each reference replaced by the base64 of the payload of the
    record it names (``body_of(record_id)``). ``ValueError`` when the elided payload or a
    record does not match what the elisions say."""
    parts: list[bytes] = []
    position = 0
    for elision in elisions:
        ref = reference(elision.record_id)
        end = elision.offset + len(ref)
        if elision.offset < position or elided[elision.offset : end] != ref:
            raise ValueError(f"no reference to {elision.record_id} at {elision.offset}")
        body = body_of(elision.record_id)
        encoded = base64.b64encode(body)
        if len(encoded) != elision.length or digest(body) != elision.digest:
            raise ValueError(f"{elision.record_id} holds other bytes than the page carried")
        parts += [elided[position : elision.offset], encoded]
        position = end
    parts.append(elided[position:])
    return b"".join(parts)


def digest(body: bytes) -> str:
    """``body``'s SHA-1 as WARC-Payload-Digest spells it.

    >>> digest(b"")
    'sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ'
    """
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def _span(payload: memoryview, item: Carried, start: int) -> int:
    """Where ``item``'s base64 text is first the whole text of an element, from ``start``
    on; -1 when it is nowhere so or is not the canonical encoding of its bytes. Candidates
    are found by the text's first bytes, then compared whole."""
    encoded = item.encoded
    if not encoded or not _canonical(encoded, item.body):
        return -1
    data = payload.obj
    if not isinstance(data, bytes):
        raise TypeError(f"a list page's payload is a view of bytes, not of {type(data).__name__}")
    head = encoded[:_HEAD]
    at = data.find(head, start)
    while at > 0:  # each find starts past the last: at most len(payload) of them
        end = at + len(encoded)
        if data[at - 1] == _GT and data[end : end + 1] == b"<" and data.startswith(encoded, at):
            return at
        at = data.find(head, at + 1)
    return -1


def _canonical(encoded: bytes, body: bytes) -> bool:
    """Whether ``encoded`` is what ``base64.b64encode(body)`` gives. Decoding accepts any
    bits in the padding of the last quantum, so that quantum is encoded again; the rest of
    a text that decoded to ``body`` can only be the canonical one.

    >>> _canonical(b"QQ==", b"A"), _canonical(b"QR==", b"A")
    (True, False)
    """
    if len(encoded) != 4 * ((len(body) + 2) // 3):
        return False
    tail = body[len(body) - (len(body) % 3 or 3) :]
    return base64.b64encode(tail) == encoded[-4:]
