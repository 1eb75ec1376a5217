"""A page's own records, after its capture: what the browser made of it.

One group: the screenshot of the viewport at the top, a ``resource`` record
``urn:view:<url>`` (``image/png``: browsertrix-crawler's name and type for its "view"
screenshot), the page's text as rendered, a ``resource`` record ``urn:text:<url>``
(``text/plain``, browsertrix's ``--text to-warc``; ``harvester wacz`` puts it in
``pages.jsonl`` for full-text search), closed by a ``warc-fields`` metadata record listing the
page and every resource it loaded (``resource: URL``), in the order they answered.
"""

from __future__ import annotations

from collections.abc import Sequence

from harvester.archive.warc import RecordLocation, RotatingWARCWriter
from harvester.browser.tab import PageCapture

VIEW, TEXT = "urn:view:", "urn:text:"


def write_page_records(
    writer: RotatingWARCWriter, page: PageCapture, resources: Sequence[str]
) -> list[RecordLocation]:
    """The page's group written; none when the page was not rendered (not HTML)."""
    if not page.rendered:
        return []
    records = []
    if page.screenshot:
        records.append(writer.resource_record(VIEW + page.url, "image/png", page.screenshot))
    records.append(
        writer.resource_record(
            TEXT + page.url, "text/plain; charset=utf-8", page.text.encode("utf-8")
        )
    )
    fields = [f"page: {page.url}", *(f"resource: {url}" for url in resources)]
    if not page.complete:
        fields.append("note: the page was still loading at its time limit")
    note = ("\r\n".join(_one_line(f) for f in fields) + "\r\n").encode("utf-8")
    return writer.write_group(
        records,
        then=lambda locs: [
            writer.metadata_record(
                note, content_type="application/warc-fields", refers_to=locs[0].record_id
            )
        ],
    )


def _one_line(field: str) -> str:
    return field.replace("\r", "%0D").replace("\n", "%0A")
