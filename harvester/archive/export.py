"""Exporting the DIDL preservation records of a collection as standalone XML files."""

from __future__ import annotations

from pathlib import Path

from lxml import etree
from warcio.archiveiterator import ArchiveIterator

from harvester.archive.didl import didl_filename

DII_IDENTIFIER = "{urn:mpeg:mpeg21:2002:01-DII-NS}Identifier"


def export_didls(warc_dir: Path, folder: Path) -> int:
    """Write every DIDL metadata record found in ``warc_dir`` into ``folder``; return the count."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
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


def _identifier(data: bytes) -> str | None:
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return None
    return root.findtext(f".//{DII_IDENTIFIER}")
