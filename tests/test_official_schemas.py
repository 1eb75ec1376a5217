"""The official schemas the tests validate against travel with the repository (issue 12, #16):
a clean clone with nothing beside it runs every XML-validation test."""

from __future__ import annotations

import pytest
from lxml import etree

from tests.schemas import IMPORTS, REFERENCE, REPO, CatalogResolver, assert_valid


def test_every_schema_the_tests_import_is_inside_the_repository() -> None:
    for path in [REFERENCE, *IMPORTS.values()]:
        assert path.resolve().is_relative_to(REPO), path
        assert path.exists(), path


def test_the_catalog_maps_only_to_carried_files() -> None:
    mapped = CatalogResolver().map
    assert "http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd" in mapped
    for local in mapped.values():
        assert REFERENCE.resolve() in (REFERENCE / local).resolve().parents


def test_the_combined_schema_rejects_an_invalid_response() -> None:
    bad = etree.fromstring(
        b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><nothing/></OAI-PMH>'
    )
    with pytest.raises(AssertionError, match="schema-invalid"):
        assert_valid(bad)


def test_a_premis_object_inside_a_didl_statement_is_checked() -> None:
    """DIDL's Statement is lax: the PREMIS 3 schema carried here is what checks its object."""
    bad = etree.fromstring(
        b'<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS"><didl:Item><didl:Component>'
        b'<didl:Descriptor><didl:Statement mimeType="application/xml">'
        b'<premis:premis xmlns:premis="http://www.loc.gov/premis/v3" version="3.0">'
        b'<premis:object xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
        b' xsi:type="premis:file"><premis:size>1</premis:size></premis:object>'
        b"</premis:premis></didl:Statement></didl:Descriptor>"
        b'<didl:Resource mimeType="text/plain" ref="http://x/"/></didl:Component></didl:Item>'
        b"</didl:DIDL>"
    )
    with pytest.raises(AssertionError, match="objectIdentifier"):
        assert_valid(bad)
