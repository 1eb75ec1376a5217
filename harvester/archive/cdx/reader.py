"""CDXJ lines read back from WARC files, with cdxj-indexer: for WARC files whose lines were
not made as they were written (files repaired after a crash, or a full rebuild).

cdxj-indexer (and the pyamf it imports) takes a noticeable share of a short run's start-up,
so :mod:`harvester.archive.cdx.index` imports this module only when a file must be read back.
Files are read as WARC only, and more strictly than warcio does; see that module's docstring.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from cdxj_indexer.main import CDXJIndexer
from warcio.archiveiterator import WARCIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeadersParserException

from harvester.archive.cdx.line import WARC_SUFFIXES, is_capture
from harvester.exceptions import ArchiveError

__all__ = ["read_back"]

_MANDATORY = ("WARC-Record-ID", "Content-Length", "WARC-Date", "WARC-Type")  # WARC 1.1, 5.1
# What warcio and cdxj-indexer raise on a damaged file, found by fuzzing: a header block cut
# short or garbled gives None where they expect a string (AttributeError, TypeError).
_READ_ERRORS = (
    ArchiveLoadFailed,
    StatusAndHeadersParserException,
    AttributeError,
    EOFError,
    TypeError,
    ValueError,
    zlib.error,
)


class _CaptureIndexer(CDXJIndexer):
    """cdxj-indexer limited to captures, reading WARC records only."""

    def _create_record_iter(self, input_: BinaryIO) -> WARCIterator:
        # cdxj-indexer's iterator also takes ARC records, and so reads garbage as ARC.
        return _CheckedIterator(input_, no_record_parse=False, verify_http=self.verify_http)

    def filter_record(self, record: ArcWarcRecord) -> bool:
        return is_capture(record)


class _CheckedIterator(WARCIterator):
    """warcio's WARC reader, refusing a file cut short, which warcio reads without a word."""

    def _iterate_records(self) -> Iterator[ArcWarcRecord]:
        yield from super()._iterate_records()
        size = self.fh.seek(0, os.SEEK_END)
        if self.offset != size:  # warcio stops quietly at a record it cannot read in full
            raise ArchiveLoadFailed(f"cut short: no complete record after offset {self.offset}")

    def read_to_end(self, record: ArcWarcRecord | None = None) -> None:
        super().read_to_end(record)
        if self.record is None:
            return
        offset = self.member_info[0]
        headers = self.record.rec_headers
        missing = [name for name in _MANDATORY if not headers.get_header(name)]
        if missing or not headers.get_header("Content-Length").isdigit():
            raise ArchiveLoadFailed(f"record at offset {offset} has a cut or invalid header")
        if getattr(self.record.raw_stream, "limit", 0) > 0:  # unread bytes of Content-Length
            raise ArchiveLoadFailed(f"record at offset {offset} is cut short")


@contextlib.contextmanager
def read_back(paths: Sequence[Path]) -> Iterator[TextIO]:
    """A temporary file with the sorted, de-duplicated CDXJ lines of ``paths``.

    cdxj-indexer sorts in memory up to 32 MiB of lines and merges runs from disk beyond.
    """
    for path in paths:
        if not path.name.endswith(WARC_SUFFIXES):
            raise ArchiveError(f"{path}: not a closed .warc.gz or .warc file")
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as sink:
        indexer = _CaptureIndexer(sink, [str(path) for path in paths], sort=True)
        try:
            indexer.process_all()
        except _READ_ERRORS as exc:
            raise ArchiveError(f"cannot index {indexer.curr_filename}: {exc}") from exc
        except OSError as exc:
            raise ArchiveError(f"cannot read {indexer.curr_filename}: {exc}") from exc
        sink.seek(0)
        yield sink
