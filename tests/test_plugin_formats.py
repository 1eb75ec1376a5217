"""Forensic metadata end to end: a folder of real files in many formats, the provider with
its default (built-in) plugins, and each file's ``oai_didl`` and ``premis`` records, valid
against the official OAI-PMH, MPEG-21 DIDL and PREMIS 3 schemas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from lxml import etree

from server_module import create_app
from tests.formatcorpus import CAMERA_MAKE, CAMERA_MODEL, corpus, make_corpus
from tests.schemas import assert_valid

BASE = "http://example.org"
NS = {
    "oai": "http://www.openarchives.org/OAI/2.0/",
    "didl": "urn:mpeg:mpeg21:2002:02-DIDL-NS",
    "pres": "urn:coop-archive:preservation:1.0",
    "premis": "http://www.loc.gov/premis/v3",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlaskClient]:
    root = tmp_path_factory.mktemp("formats") / "site"
    make_corpus(root)
    app = create_app(root, BASE, watch=False, refresh_interval=0)  # plugins: the default
    assert app.extensions["oai_repository"].index.wait_analysed(timeout=300)
    yield app.test_client()
    app.extensions["oai_repository"].index.close()


def record(client: FlaskClient, name: str, prefix: str = "oai_didl") -> etree._Element:
    response = client.get(
        "/oai",
        query_string={
            "verb": "GetRecord",
            "identifier": f"{BASE}/{name}",
            "metadataPrefix": prefix,
        },
    )
    assert response.status_code == 200
    return assert_valid(response.data)  # DIDL, its PREMIS object and analyses included


def analysis(root: etree._Element, label: str) -> etree._Element:
    (found,) = root.iterfind(f".//didl:Component//pres:analysis[@label='{label}']", NS)
    return found


def puid(root: etree._Element) -> str | None:
    return root.findtext(".//premis:object//premis:formatRegistryKey", namespaces=NS)


@pytest.mark.parametrize("name", sorted(corpus()))
def test_each_files_didl_names_its_pronom_identifier(client: FlaskClient, name: str) -> None:
    expected = corpus()[name][1]
    root = record(client, name)
    assert puid(root) == expected
    for label in ("libmagic", "pronom"):
        assert analysis(root, label).get("tool")
    obj = root.find(".//didl:Component//premis:object", NS)
    assert obj is not None
    digests = obj.findall(".//premis:messageDigestAlgorithm", NS)
    assert [d.text for d in digests] == ["SHA-1", "SHA-256"]
    assert obj.findtext(".//premis:size", namespaces=NS) == str(len(corpus()[name][0]))


def test_the_jpegs_camera_fields_appear(client: FlaskClient) -> None:
    exif = analysis(record(client, "photo.jpg"), "exiftool")
    assert exif.get("status") == "ok" and exif.get("output") == "xml"
    values = {el.tag.rpartition("}")[2]: el.text for el in exif.iter()}
    assert values["Make"] == CAMERA_MAKE
    assert values["Model"] == CAMERA_MODEL
    assert "Directory" not in values and "FileName" not in values  # the disk is not described


def test_the_file_whose_name_lies_is_identified_by_its_content(client: FlaskClient) -> None:
    root = record(client, "lies.pdf")
    resource = root.find(".//didl:Resource", NS)
    assert resource is not None and resource.get("mimeType") == "application/pdf"  # its name
    assert puid(root) == "fmt/11"
    assert analysis(root, "libmagic").text.startswith("image/png\n")
    notes = root.findall(".//premis:formatNote", NS)
    assert "PRONOM identification by content (signature)" in [n.text for n in notes]


def test_the_malformed_pdf_is_reported_as_such(client: FlaskClient) -> None:
    root = record(client, "broken.pdf")
    pdfinfo = analysis(root, "pdfinfo")
    assert pdfinfo.get("status") == "failed" and pdfinfo.get("exitCode") != "0"
    assert "Syntax Error" in pdfinfo.text
    assert puid(root) is None  # only its name says PDF, and that names many formats
    outcomes = root.findall(
        ".//premis:event/premis:eventOutcomeInformation/premis:eventOutcome", NS
    )
    assert "failure" in [o.text for o in outcomes]
    good = analysis(record(client, "doc.pdf"), "pdfinfo")
    assert good.get("status") == "ok" and "Forensic test" in good.text


def test_the_tools_are_premis_agents_linked_by_events(client: FlaskClient) -> None:
    root = record(client, "photo.jpg", prefix="premis")
    agents = {
        a.findtext("premis:agentName", namespaces=NS): a
        for a in root.iterfind(".//premis:agent", NS)
    }
    assert {"file", "fido", "exiftool"} <= agents.keys()
    assert all(a.findtext("premis:agentType", namespaces=NS) == "software" for a in agents.values())
    types = [
        e.findtext("premis:eventType", namespaces=NS) for e in root.iterfind(".//premis:event", NS)
    ]
    assert types.count("format identification") == 2 and "metadata extraction" in types


def test_the_wav_gets_mediainfo_and_the_empty_file_a_description(client: FlaskClient) -> None:
    media = analysis(record(client, "sound.wav"), "mediainfo")
    assert media.get("status") == "ok" and media.get("output") == "xml"
    empty = record(client, "empty.txt")
    assert analysis(empty, "libmagic").text.startswith("inode/x-empty")


def test_without_plugins_the_premis_record_names_the_type_the_name_suggests(
    tmp_path: Path,
) -> None:
    root = tmp_path / "site"
    make_corpus(root)
    app = create_app(root, BASE, watch=False, refresh_interval=0, plugins=False)
    client = app.test_client()
    premis = record(client, "lies.pdf", prefix="premis")
    assert premis.findtext(".//premis:formatName", namespaces=NS) == "application/pdf"
    assert "MIME type from the file name" in premis.findtext(".//premis:formatNote", namespaces=NS)
    assert record(client, "lies.pdf").find(".//premis:premis", NS) is None
    app.extensions["oai_repository"].index.close()
