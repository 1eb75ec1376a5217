"""Exporting the DIDL preservation records of a collection as standalone XML files."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from lxml import etree
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord

from harvester.archive.didl import didl_filename
from harvester.exceptions import ArchiveError

DII_IDENTIFIER = "{urn:mpeg:mpeg21:2002:01-DII-NS}Identifier"


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
                rid = record.rec_headers.get_header("WARC-Record-ID")
                (folder / didl_filename(url, rid)).write_bytes(data)
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
