"""A page's own records, after its capture: what the browser made of it.

One group: the screenshot of the viewport at the top, a ``resource`` record
``urn:view:<url>`` (``image/png``: browsertrix-crawler's name and type for its "view"
screenshot), the page's text as rendered, a ``resource`` record ``urn:text:<url>``
(``text/plain``, browsertrix's ``--text to-warc``; ``harvester wacz`` puts it in
``pages.jsonl`` for full-text search), closed by the page's DIDL record
(:func:`~harvester.archive.didl.page_didl`): one component per record the page is made of,
its own response first, then every resource it loaded (archived with it or earlier in the
run), in the order they answered, then the screenshot and the text.
"""

from __future__ import annotations

from collections.abc import Sequence

from warcio.recordloader import ArcWarcRecord

from harvester.archive.didl import Provenance, page_didl
from harvester.archive.warc import RecordLocation, RotatingWARCWriter
from harvester.browser.tab import PageCapture

VIEW, TEXT = "urn:view:", "urn:text:"
Part = tuple[str, str]  # a record's media type and WARC-Record-ID


def write_page_records(
    writer: RotatingWARCWriter, page: PageCapture, parts: Sequence[Part], provenance: Provenance
) -> list[RecordLocation]:
    """The page's group written; none when the page was not rendered (not HTML)."""
    if not page.rendered:
        return []
    records = []
    if page.screenshot:
        records.append(writer.resource_record(VIEW + page.url, "image/png", page.screenshot))
    text = "text/plain; charset=utf-8"
    records.append(writer.resource_record(TEXT + page.url, text, page.text.encode("utf-8")))
    kinds = (["image/png"] if page.screenshot else []) + [text]

    def didl(locations: list[RecordLocation]) -> list[ArcWarcRecord]:
        ours = [(kind, at.record_id) for kind, at in zip(kinds, locations, strict=True)]
        listed = [(mime, _urn(record_id)) for mime, record_id in [*parts, *ours]]
        document = page_didl(page.url, listed, provenance)
        return [writer.metadata_record(document, refers_to=parts[0][1] if parts else None)]

    return writer.write_group(records, then=didl)


def _urn(record_id: str) -> str:
    return record_id.strip().removeprefix("<").removesuffix(">")
