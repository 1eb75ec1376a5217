"""The stored head: the HTTP head of a resource's last capture, as a 304 refreshes it.

A conditional GET answered ``304 Not Modified`` says the stored response is still the
resource's; the answer itself has no status of the resource and few of its header fields.
Replay tools (pywb, OpenWayback) serve a ``revisit`` record with the HTTP head its block
holds and the payload of the record it revisits, so a revisit that held the 304 would
replay as an empty 304. The revisit of a 304 therefore holds the head an HTTP cache would
serve after it (RFC 9111 section 4.3.4, "Freshening Stored Responses upon Validation"): the
stored response's status line and fields, each field the 304 carries replacing the stored
one of that name, except those that describe the 304 message rather than the content
(section 3.2: Content-Length, Content-Encoding, Content-Type, Content-Range; hop-by-hop
fields are never stored). The 304 as received stays in the capture's DIDL record and the
request shows the validators sent (``docs/collection.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeaders

__all__ = ["StoredHead", "refreshed", "stored_head", "stored_type"]

log = logging.getLogger(__name__)

Field = tuple[str, str]
OPEN_SUFFIX = ".open"
# Fields a 304 sends that describe the 304 message itself, or the connection; a cache keeps
# the stored response's (RFC 9111 section 3.2; RFC 9110 section 7.6.1).
KEPT = frozenset(
    {
        "content-length",
        "content-encoding",
        "content-type",
        "content-range",
        "transfer-encoding",
        "connection",
        "keep-alive",
    }
)


@dataclass(frozen=True)
class StoredHead:
    """An HTTP response head: ``HTTP/1.1``, ``200 OK`` and the fields in order."""

    protocol: str
    status: str  # code and reason phrase
    fields: tuple[Field, ...]


def stored_head(directory: Path, filename: str, offset: int) -> StoredHead | None:
    """The HTTP head of the record at ``offset`` in ``directory/filename`` (or its ``.open``
    file, still being written); None when the file or the record cannot be read, or holds no
    HTTP response head."""
    found = _stored(directory, filename, offset)
    head = found[1] if found else None
    if head is None or head.protocol not in ("HTTP/1.0", "HTTP/1.1"):
        return None
    return StoredHead(head.protocol, head.statusline, tuple(head.headers))


def stored_type(directory: Path, filename: str, offset: int) -> str | None:
    """The WARC-Type of the record at ``offset`` in ``directory/filename``, if readable."""
    found = _stored(directory, filename, offset)
    return found[0] if found else None


def _stored(
    directory: Path, filename: str, offset: int
) -> tuple[str, StatusAndHeaders | None] | None:
    """The type and HTTP head of the record at ``offset``: of ``filename``, or of its
    ``.open`` file while it is written; None when neither can be read there."""
    for path in (directory / filename, directory / (filename + OPEN_SUFFIX)):
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                record = next(iter(ArchiveIterator(fh)), None)
                return None if record is None else (record.rec_type, record.http_headers)
        except FileNotFoundError:
            continue
        except (OSError, ArchiveLoadFailed, ValueError) as exc:
            log.warning("cannot read the record at %s:%d: %s", path, offset, exc)
            return None
    return None


def refreshed(stored: StoredHead | None, not_modified: Sequence[Field]) -> StoredHead:
    """``stored`` freshened by the 304's fields ``not_modified`` (RFC 9111 section 4.3.4).

    Without a stored head (its file gone, a shared job's other folder), or when it is itself
    a 304 (a revisit written before this rule), the result is ``200 OK`` with the 304's own
    fields: the status the 304 stands for.

    >>> old = StoredHead("HTTP/1.1", "200 OK", (("Content-Type", "text/html"), ("ETag", '"a"'),
    ...                                          ("Date", "Mon")))
    >>> refreshed(old, [("Date", "Tue"), ("Content-Length", "0"), ("Age", "3")]).fields
    (('Content-Type', 'text/html'), ('ETag', '"a"'), ('Date', 'Tue'), ('Age', '3'))
    >>> refreshed(None, [("ETag", '"a"')]).status
    '200 OK'
    """
    fresh = [(k, v) for k, v in not_modified if k.lower() not in KEPT]
    if stored is None or stored.status.startswith("304"):
        base = StoredHead(stored.protocol if stored else "HTTP/1.1", "200 OK", ())
        base_fields = [(k, v) for k, v in (stored.fields if stored else ()) if k.lower() in KEPT]
    else:
        base, base_fields = stored, list(stored.fields)
    names = {k.lower() for k, _ in fresh}
    replaced = {k.lower(): (k, v) for k, v in fresh}
    # each replaced field stays where the stored head had it; new ones follow
    merged: list[Field] = []
    placed: set[str] = set()
    for k, v in base_fields:
        name = k.lower()
        if name in replaced and name not in placed:
            merged.append(replaced[name])
            placed.add(name)
        elif name not in names:
            merged.append((k, v))
    merged += [(k, v) for k, v in fresh if k.lower() not in placed]
    return StoredHead(base.protocol, base.status, tuple(merged))
