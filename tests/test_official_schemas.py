"""The official schemas the tests validate against travel with the repository (issue 12, #16):
a clean clone with nothing beside it runs every XML-validation test."""

from __future__ import annotations

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
    try:
        assert_valid(bad)
    except AssertionError as exc:
        assert "schema-invalid" in str(exc)
    else:
        raise AssertionError("an OAI-PMH document without responseDate passed validation")
