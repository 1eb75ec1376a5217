"""Exporting the DIDL preservation records of a collection as standalone XML files.

Each file is named from the URL it describes, in wget's ``-x`` layout: a folder per host (and
port; for an item's identifier, ``oai:…``, its scheme), one per path segment, and the last
segment with the capture's WARC-Date and ``.xml`` appended, so that
``didl/127.0.0.1+8080/docs/a b.html.20240501T120304Z.xml`` is the record of
``http://127.0.0.1:8080/docs/a%20b.html`` captured then. Each segment is decoded, then quoted
again keeping letters and digits of any script and a few safe marks (``/``, ``\\``, ``:``,
``%``, controls, bidi overrides… become ``%XX``); ``.`` and ``..`` are quoted whole, a query
is kept as ``%3F…``, an empty last segment (``/`` ending the path) is named ``index``, and a
segment too long for a file name is cut and given a hash of the whole. Two captures named
alike (the same URL within one second) get ``-2``, ``-3``… before ``.xml``; the same record
exported twice is one file.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote, unquote, urlsplit

from lxml import etree
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord

from harvester.exceptions import ArchiveError

DII_IDENTIFIER = "{urn:mpeg:mpeg21:2002:01-DII-NS}Identifier"
_SAFE = "-._~!$&'()+,;=@ "  # kept as they are in a segment; the rest is %XX
_MAX_SEGMENT = 200  # bytes of a file name, leaving room for the date and ".xml" (255 at most)


def export_didls(warc_dir: Path, folder: Path) -> int:
    """Write every DIDL metadata record found in ``warc_dir`` into ``folder``; return the count.

    ArchiveError names a file that is not a readable WARC file."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in _records(fh, path):
                if record.rec_type != "metadata" or record.content_type != "application/xml":
                    continue
                data = record.content_stream().read()
                url = _identifier(data)
                if url is None:
                    continue
                when = record.rec_headers.get_header("WARC-Date") or ""
                _write_new(folder / export_path(url, when), data)
                count += 1
    return count


def _records(fh: BinaryIO, path: Path) -> Iterator[ArcWarcRecord]:
    try:
        yield from ArchiveIterator(fh)
    except (ArchiveLoadFailed, zlib.error, EOFError) as exc:
        raise ArchiveError(f"{path}: not a readable WARC file ({exc})") from None


def _identifier(data: bytes) -> str | None:
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return None
    return root.findtext(f".//{DII_IDENTIFIER}")


def export_path(url: str, warc_date: str) -> Path:
    """The relative path of the exported record of ``url`` captured at ``warc_date``.

    >>> str(export_path("http://127.0.0.1:8080/docs/a%20b.html", "2024-05-01T12:03:04Z"))
    '127.0.0.1+8080/docs/a b.html.20240501T120304Z.xml'
    >>> str(export_path("http://h/../x/?q=a/b", "2024-05-01T12:03:04.5Z"))
    'h/%2E%2E/x/index%3Fq=a%2Fb.20240501T120304Z.xml'
    >>> str(export_path("http://h", "")), str(export_path("http://h/a:b%5Cc%00", ""))
    ('h/index.xml', 'h/a%3Ab%5Cc%00.xml')
    >>> str(export_path("oai:repo.example.org:12/3", "2024-05-01T12:03:04Z"))
    'oai/repo.example.org%3A12%2F3.20240501T120304Z.xml'
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:  # an item's identifier
        scheme, _, rest = url.partition(":")
        host, folders, last = (scheme if rest else "") or "identifier", [], rest or url
    else:
        host = parts.hostname + (f"+{parts.port}" if parts.port else "")
        *folders, last = ("/" + parts.path.lstrip("/")).split("/")[1:]
        last = (last or "index") + (f"?{parts.query}" if parts.query else "")
    stamp = "".join(c for c in warc_date.split(".")[0] if c.isalnum())
    stamp = f"{stamp}Z" if stamp and not stamp.endswith("Z") else stamp
    name = _segment(last) + (f".{stamp}" if stamp else "") + ".xml"
    return Path(_segment(host), *(_segment(f) for f in folders), name)


def _segment(text: str) -> str:
    """One path segment as a safe, readable file name (see the module docstring).

    >>> _segment("caf%C3%A9 %E2%80%AE%FF"), _segment(".."), _segment("x" * 300)[-17:]
    ('café %E2%80%AE%FF', '%2E%2E', '~02fd68253071f895')
    """
    decoded = unquote(text, errors="surrogateescape")
    if decoded in (".", ".."):
        return decoded.replace(".", "%2E")
    safe = "".join(c if _kept(c) else _escaped(c) for c in decoded)
    if len(safe.encode()) <= _MAX_SEGMENT:
        return safe
    digest = hashlib.sha1(safe.encode()).hexdigest()[:16]
    return f"{safe.encode()[: _MAX_SEGMENT - 17].decode(errors='ignore')}~{digest}"


def _kept(char: str) -> bool:
    """Letters and digits of any script, and a few marks; no controls, no bidi overrides."""
    if char in _SAFE:
        return True
    return char.isalnum() and char.isprintable() and not "\ud800" <= char <= "\udfff"


def _escaped(char: str) -> str:
    return quote(char.encode("utf-8", errors="surrogateescape"), safe="")


def _write_new(path: Path, data: bytes) -> None:
    """Write ``data`` at ``path``, or beside it (``-2``, ``-3``…) when another capture has
    it; the same record exported again (a second folder, a second export) is written once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    candidate, number = path, 1
    while True:
        try:
            with open(candidate, "xb") as fh:
                fh.write(data)
            return
        except FileExistsError:
            if candidate.read_bytes() == data:
                return
            number += 1
            candidate = path.with_name(f"{path.name.removesuffix('.xml')}-{number}.xml")
