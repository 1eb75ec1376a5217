"""Validation against the official schemas carried in ``tests/official-schemas/`` (never the
network; that folder's README names their sources): one lxml schema that imports OAI-PMH,
oai_dc, MPEG-21 DIDL and the project's own schemas, so a ListRecords response is checked down
to its metadata (``processContents`` is strict there)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lxml import etree

REPO = Path(__file__).resolve().parent.parent
REFERENCE = Path(__file__).resolve().parent / "official-schemas"
OWN = REPO / "schemas"
IMPORTS = {
    "http://www.openarchives.org/OAI/2.0/": REFERENCE / "OAI-PMH.xsd",
    "http://www.openarchives.org/OAI/2.0/oai_dc/": REFERENCE / "oai_dc.xsd",
    "urn:mpeg:mpeg21:2002:02-DIDL-NS": REFERENCE / "didl.xsd",
    "urn:coop-archive:http-header:1.0": OWN / "http_header.xsd",
    "urn:coop-archive:preservation:1.0": OWN / "preservation.xsd",
    "http://www.loc.gov/premis/v3": REFERENCE / "premis.xsd",
}


class CatalogResolver(etree.Resolver):
    """Maps official schema addresses to the local copies listed in ``catalog.xml``."""

    def __init__(self) -> None:
        super().__init__()
        catalog = etree.parse(str(REFERENCE / "catalog.xml"))
        ns = {"c": "urn:oasis:names:tc:entity:xmlns:xml:catalog"}
        self.map = {
            e.get("name"): str(REFERENCE / e.get("uri")) for e in catalog.iterfind("c:uri", ns)
        }

    def resolve(self, url, pubid, context):  # type: ignore[no-untyped-def]
        if url in self.map:
            return self.resolve_filename(self.map[url], context)
        return None


@cache
def combined_schema() -> etree.XMLSchema:
    imports = "".join(
        f'<xs:import namespace="{ns}" schemaLocation="{path.as_uri()}"/>'
        for ns, path in IMPORTS.items()
    )
    wrapper = (
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" '
        f'targetNamespace="urn:test:wrapper">{imports}</xs:schema>'
    )
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    parser.resolvers.add(CatalogResolver())
    return etree.XMLSchema(
        etree.fromstring(wrapper.encode(), parser, base_url=str(REFERENCE) + "/")
    )


def assert_valid(document: bytes | etree._Element) -> etree._Element:
    """Parse (if needed) and validate; fail with the schema's own messages."""
    root = document if isinstance(document, etree._Element) else etree.fromstring(document)
    schema = combined_schema()
    if not schema.validate(root):
        messages = "\n".join(str(e) for e in list(schema.error_log)[:10])
        raise AssertionError(f"schema-invalid XML:\n{messages}")
    return root
