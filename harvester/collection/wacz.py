"""Packaging a collection as WACZ 1.1.1 (Web Archive Collection Zipped): ``harvester wacz``.

The ZIP holds, as the specification lays them out:

* ``archive/*.warc.gz``: the collection's finished WARC files, stored (not deflated again), so
  replay tools read records by HTTP range requests;
* ``indexes/index.cdx.gz``: the collection's CDXJ lines (main index and per-WARC files), merged,
  sorted and gzipped, each naming its WARC file as it lies in ``archive/``; the name is the one
  the specification's examples use, and the one pywb's ``wb-manager add --unpack-wacz`` looks
  for (``*.cdx`` or ``*.cdx.gz``); stored, not deflated again, like the WARC files;
* ``pages/pages.jsonl``: a ``json-pages-1.0`` header, then one line per HTML page captured with
  status 200, at its latest capture: ``url``, ``ts`` (ISO 8601) and ``title`` when the page
  has one, and ``text`` (for full-text search) when a browser crawl recorded the page's text;
* ``datapackage.json``: a Frictionless data package (``profile: data-package``) listing each
  file above with its ``sha256:`` hash and byte count, ``wacz_version: 1.1.1``, ``created``
  and ``software``, and ``mainPageUrl``/``mainPageDate`` (the first page);
* ``datapackage-digest.json``: the hash of ``datapackage.json`` (unsigned).

The package is written beside its final name and renamed, so a reader never sees half of one.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from harvester import __version__
from harvester.collection.folder import Collection

log = logging.getLogger(__name__)
WACZ_VERSION = "1.1.1"
INDEX = "indexes/index.cdx.gz"
PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_TITLE_BYTES = 1 << 16  # of a page read to find its title
_TEXT = "urn:text:"  # a page's text as the browser rendered it (harvester/browser/pagerecords.py)
_COPY = 1 << 20

Tick = Callable[[int], None]


@dataclass(frozen=True)
class Page:
    url: str
    ts: str
    title: str | None
    text: str | None = None  # as rendered: a browser crawl's ``urn:text:`` record

    def as_dict(self) -> dict[str, str]:
        data = {"url": self.url, "ts": self.ts}
        data = {**data, "title": self.title} if self.title else data
        return {**data, "text": self.text} if self.text is not None else data


def write_wacz(folder: Path, target: Path, tick: Tick | None = None) -> dict[str, Any]:
    """Package the collection in ``folder`` as ``target``; return what went in."""
    collection = Collection.at(folder)
    tick = tick or (lambda n: None)
    lines = cdxj_lines(collection.indexes())
    pages = html_pages(collection.warc_dir, lines)
    partial = target.with_name(target.name + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        resources = [_add_file(zf, p, f"archive/{p.name}", tick) for p in collection.warcs()]
        index = gzip.compress("".join(lines).encode(), mtime=0)
        resources.append(_add_bytes(zf, INDEX, index))
        resources.append(_add_bytes(zf, "pages/pages.jsonl", _pages_jsonl(pages)))
        package = _datapackage(collection, resources, pages)
        zf.writestr("datapackage.json", package)
        digest = {"path": "datapackage.json", "hash": "sha256:" + _sha256(package)}
        zf.writestr("datapackage-digest.json", json.dumps(digest, indent=2))
    os.replace(partial, target)
    return {
        "wacz": str(target),
        "warcs": len(resources) - 2,
        "pages": len(pages),
        "captures": len(lines),
        "bytes": target.stat().st_size,
    }


def cdxj_lines(indexes: Sequence[Path]) -> list[str]:
    """Every line of the CDXJ files, sorted, each once (an interrupted merge leaves two)."""
    lines: set[str] = set()
    for path in indexes:
        with open(path, encoding="utf-8") as fh:
            lines.update(
                line if line.endswith("\n") else line + "\n" for line in fh if line.strip()
            )
    return sorted(lines)


def html_pages(warc_dir: Path, lines: Iterable[str]) -> list[Page]:
    """The HTML pages captured with status 200, each at its latest capture, in URL order."""
    latest: dict[str, tuple[str, dict[str, str]]] = {}
    texts: dict[str, dict[str, str]] = {}
    for line in lines:
        _key, timestamp, block = line.split(" ", 2)
        fields = json.loads(block)
        if fields.get("url", "").startswith(_TEXT):
            texts[fields["url"].removeprefix(_TEXT)] = fields
        if fields.get("mime") != "text/html" or fields.get("status") != "200":
            continue
        url = fields["url"]
        if url not in latest or latest[url][0] < timestamp:
            latest[url] = (timestamp, fields)
    pages = []
    for url, (timestamp, fields) in sorted(latest.items()):
        title = _title(warc_dir / fields["filename"], int(fields["offset"]))
        text = None if url not in texts else _text(warc_dir, texts[url])
        pages.append(Page(url, _iso(timestamp), title, text))
    return pages


def _title(path: Path, offset: int) -> str | None:
    """The ``<title>`` of the page whose record is at ``offset``, if its first 64 KiB hold one."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        for record in ArchiveIterator(fh):
            head = record.content_stream().read(_TITLE_BYTES)
            found = _TITLE.search(head)
            if found is None:
                return None
            text = found.group(1).decode("utf-8", errors="replace")
            return " ".join(text.split()) or None
    return None


def _text(warc_dir: Path, fields: dict[str, str]) -> str:
    """The content of the record that ``fields`` (its CDXJ line's) point at, as text."""
    with open(warc_dir / fields["filename"], "rb") as fh:
        fh.seek(int(fields["offset"]))
        record = next(iter(ArchiveIterator(fh)))
        return record.content_stream().read().decode("utf-8", errors="replace")


def _iso(timestamp: str) -> str:
    """A CDX timestamp as ISO 8601.

    >>> _iso("20240501120304")
    '2024-05-01T12:03:04Z'
    """
    t = timestamp.ljust(14, "0")
    return f"{t[:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:14]}Z"


def _pages_jsonl(pages: Sequence[Page]) -> bytes:
    rows = [PAGES_HEADER, *(p.as_dict() for p in pages)]
    return "".join(json.dumps(row) + "\n" for row in rows).encode("utf-8")


def _add_file(zf: zipfile.ZipFile, path: Path, name: str, tick: Tick) -> dict[str, Any]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as src, zf.open(name, "w", force_zip64=True) as dst:
        while chunk := src.read(_COPY):
            digest.update(chunk)
            dst.write(chunk)
            size += len(chunk)
            tick(len(chunk))
    return _resource(name, "sha256:" + digest.hexdigest(), size)


def _add_bytes(zf: zipfile.ZipFile, name: str, data: bytes) -> dict[str, Any]:
    zf.writestr(name, data)
    return _resource(name, "sha256:" + _sha256(data), len(data))


def _resource(path: str, digest: str, size: int) -> dict[str, Any]:
    return {"name": path.rsplit("/", 1)[-1], "path": path, "hash": digest, "bytes": size}


def _datapackage(
    collection: Collection, resources: list[dict[str, Any]], pages: Sequence[Page]
) -> bytes:
    package: dict[str, Any] = {
        "profile": "data-package",
        "wacz_version": WACZ_VERSION,
        "title": collection.folder.resolve().name,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "software": f"coop-archive-harvester/{__version__}",
        "resources": resources,
    }
    if pages:
        package["mainPageUrl"], package["mainPageDate"] = pages[0].url, pages[0].ts
    return json.dumps(package, indent=2).encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
