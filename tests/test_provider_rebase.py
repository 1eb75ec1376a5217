"""A new base URL keeps the promise of ``deletedRecord=persistent`` (issue 12, #14).

Identifiers are URLs built from the base URL. When it changes, every old identifier becomes a
deleted record, stamped when the change became known, and every file appears again as a new
item under its new identifier.
"""

from __future__ import annotations

from pathlib import Path

from sickle import Sickle

from tests.conftest import OAI, start_provider
from tests.sites import make_site


def _list(endpoint: str, **params: str) -> tuple[dict[str, bool], str]:
    """Every identifier of a full sickle list with its deleted flag, and the responseDate."""
    items = Sickle(endpoint).ListIdentifiers(metadataPrefix="oai_dc", **params)
    response_date = items.oai_response.xml.findtext(f"{OAI}responseDate")
    return {header.identifier: header.deleted for header in items}, response_date


def test_a_new_base_url_leaves_the_old_identifiers_as_deleted_records(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=12)
    index = tmp_path / "idx.sqlite"
    with start_provider(site.root, index, page_size=7) as first:
        before, since = _list(first.url + "/oai")
    old_base = first.url  # each start gets its own port, hence its own base URL
    with start_provider(site.root, index, page_size=7, rebase=True) as second:
        endpoint = second.url + "/oai"
        after, _ = _list(endpoint)
        changes, _ = _list(endpoint, **{"from": since})
        old_id = sorted(before)[0]
        record = Sickle(endpoint).GetRecord(identifier=old_id, metadataPrefix="oai_dc")
    assert second.url != old_base
    assert len(before) == len(site.public) and not any(before.values())
    renamed = {i.replace(old_base, second.url, 1) for i in before}
    assert after == {**dict.fromkeys(before, True), **dict.fromkeys(renamed, False)}
    assert changes == after  # every old and every new identifier changed since the first list
    assert record.header.deleted and record.header.identifier == old_id
