"""Harvesting a generated site from the provider over real sockets, with independent clients."""

from __future__ import annotations

import base64
import os
from urllib.parse import quote, unquote_to_bytes

import requests
from oaipmh.client import Client
from oaipmh.metadata import MetadataRegistry, oai_dc_reader
from sickle import Sickle

from tests.conftest import NS, OAI, OAIClient
from tests.servers import RunningServer
from tests.sites import Manifest

DIDL = {"didl": "urn:mpeg:mpeg21:2002:02-DIDL-NS", "dii": "urn:mpeg:mpeg21:2002:01-DII-NS"}
HTTP = {"http": "urn:coop-archive:http-header:1.0"}


def expected_urls(server: RunningServer, site: Manifest) -> set[str]:
    return {f"{server.url}/{quote(os.fsencode(p), safe='/')}" for p in site.public}


def test_sickle_lists_exactly_the_public_files(provider: RunningServer, site: Manifest) -> None:
    sickle = Sickle(provider.url + "/oai")
    headers = list(sickle.ListIdentifiers(metadataPrefix="oai_dc"))
    ids = [h.identifier for h in headers]
    assert len(ids) == len(set(ids)), "an identifier was listed twice"
    assert set(ids) == expected_urls(provider, site)
    assert site.unlinked and all(not h.deleted for h in headers)
    relpaths = {os.fsdecode(unquote_to_bytes(i[len(provider.url) + 1 :])) for i in ids}
    assert relpaths & site.hidden == set()
    assert relpaths >= site.unlinked


def test_oaipmh_client_agrees(provider: RunningServer, site: Manifest) -> None:
    registry = MetadataRegistry()
    registry.registerReader("oai_dc", oai_dc_reader)
    client = Client(provider.url + "/oai", registry)
    ids = {h.identifier() for h in client.listIdentifiers(metadataPrefix="oai_dc")}
    assert ids == expected_urls(provider, site)
    records = list(client.listRecords(metadataPrefix="oai_dc"))
    assert {h.identifier() for h, _m, _a in records} == ids
    titles = {m.getField("title")[0] for _h, m, _a in records}
    assert "Page index.html" in titles
    assert client.identify().deletedRecord() == "persistent"


def test_pages_carry_size_and_cursor(oai: OAIClient, site: Manifest) -> None:
    root = oai.get(verb="ListIdentifiers", metadataPrefix="oai_dc")
    cursors, total = [], len(site.public)
    while True:
        token = root.find(f".//{OAI}resumptionToken")
        assert token is not None and token.get("completeListSize") == str(total)
        cursors.append(int(token.get("cursor")))
        if not token.text:
            break
        assert token.get("expirationDate")
        root = oai.get(verb="ListIdentifiers", resumptionToken=token.text)
    assert cursors == list(range(0, total, 7))


def test_sets_are_mime_types(oai: OAIClient, provider: RunningServer) -> None:
    specs = oai.get(verb="ListSets").xpath("//oai:setSpec/text()", namespaces=NS)
    assert {"text", "text:html", "image", "image:png", "application:pdf"} <= set(specs)
    png = Sickle(provider.url + "/oai").ListIdentifiers(metadataPrefix="oai_dc", set="image:png")
    ids = [h.identifier for h in png]
    assert ids and all(i.endswith(".png") for i in ids)


def test_list_records_in_every_format_validates(oai: OAIClient) -> None:
    for prefix in ("oai_dc", "http_header", "oai_didl"):
        root = oai.get(verb="ListRecords", metadataPrefix=prefix)
        pages = 1
        while (token := root.findtext(f".//{OAI}resumptionToken")) and pages < 3:
            root = oai.get(verb="ListRecords", resumptionToken=token)
            pages += 1
        assert root.findall(f".//{OAI}record")


def _get_record(oai: OAIClient, url: str, prefix: str):  # type: ignore[no-untyped-def]
    return oai.get(verb="GetRecord", identifier=url, metadataPrefix=prefix)


def test_http_header_is_what_get_returns(oai: OAIClient, provider: RunningServer) -> None:
    url = provider.url + "/docs/with%20space.html"
    root = _get_record(oai, url, "http_header")
    fields = [(f.get("name"), f.text or "") for f in root.iterfind(".//http:field", HTTP)]
    resp = requests.get(url, timeout=10)
    assert resp.status_code == 200
    for name, value in fields:
        assert resp.headers[name] == value, name
    assert {n for n, _ in fields} >= {"Content-Type", "Content-Length", "Last-Modified", "ETag"}


def test_didl_holds_the_file(oai: OAIClient, provider: RunningServer, site: Manifest) -> None:
    rel = next(p for p in site.public if p.endswith(".pdf"))
    url = f"{provider.url}/{quote(os.fsencode(rel), safe='/')}"
    root = _get_record(oai, url, "oai_didl")
    assert root.xpath("//dii:Identifier/text()", namespaces=DIDL) == [url]
    resources = root.xpath("//didl:Resource", namespaces=DIDL)
    assert resources[0].get("ref") == url
    inline = base64.b64decode(resources[1].text)
    assert inline == (site.root / rel).read_bytes()
    digests = root.xpath("//*[local-name()='digest']/@algorithm")
    assert digests == ["sha1", "sha256"]


def test_awkward_names_round_trip(oai: OAIClient, provider: RunningServer, site: Manifest) -> None:
    for rel in (p for p in site.public if any(c in p for c in ' %#?<&"é') or "caf" in p):
        url = f"{provider.url}/{quote(os.fsencode(rel), safe='/')}"
        root = _get_record(oai, url, "oai_dc")
        assert root.findtext(f".//{OAI}identifier") == url
        assert requests.get(url, timeout=10).content == (site.root / rel).read_bytes()
