"""The item DIDL made from its one template is the general layout's, named by a fresh UUID."""

from __future__ import annotations

import re

from harvester.archive.didl import OaiHeaderInfo, WarcPointer
from harvester.records.itemdidl import LinkedCapture, item_didl
from tests.test_didlbuilder import ENDPOINT, PROVENANCE, UUID_URN, VARIED

LINKED = [
    LinkedCapture(
        "http://repo.test/f 1.pdf",
        "application/pdf; x=y",
        "a" * 40,
        "b" * 64,
        WarcPointer("<urn:uuid:1>", "a.warc.gz", 10, 20, "response"),
    )
]


def test_item_didl_is_the_layout_named_by_a_new_uuid() -> None:
    for identifier, datestamp, specs, _deleted, formats in VARIED:
        oai = OaiHeaderInfo(identifier, datestamp, specs, ENDPOINT)
        for linked in ([], LINKED):
            made = item_didl(oai, formats, linked, PROVENANCE)
            named = re.search(rb' DIDLDocumentId="([^"]+)"', made)
            assert named is not None and re.fullmatch(UUID_URN, f"<{named.group(1).decode()}>")
            laid_out = item_didl(
                oai, formats, linked, PROVENANCE, document_id=named.group(1).decode()
            )
            assert made == laid_out
