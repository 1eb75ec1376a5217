"""Every OAI-PMH error condition (spec §3.6 and §4), answered over a real socket with HTTP 200
and a schema-valid document; the ``request`` element echoes arguments only when it may."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
import requests

from tests.conftest import OAI, OAIClient
from tests.schemas import assert_valid
from tests.servers import RunningServer

LIST = "verb=ListIdentifiers&metadataPrefix=oai_dc"
RECORDS = "verb=ListRecords&metadataPrefix=oai_dc"
GET = "verb=GetRecord&metadataPrefix=oai_dc&identifier="
# (name, the request's arguments as a query string, the error code it earns)
CASES: list[tuple[str, str, str]] = [
    ("no verb", "", "badVerb"),
    ("unknown verb", "verb=Frobnicate", "badVerb"),
    ("illegal argument", "verb=Identify&color=red", "badArgument"),
    ("Identify with argument", "verb=Identify&set=text", "badArgument"),
    ("missing prefix", "verb=ListIdentifiers", "badArgument"),
    ("GetRecord without identifier", "verb=GetRecord&metadataPrefix=oai_dc", "badArgument"),
    ("bad from", LIST + "&from=2024-13-01", "badArgument"),
    ("bad until", RECORDS + "&until=yesterday", "badArgument"),
    ("fractional seconds", LIST + "&from=2024-01-01T00:00:00.5Z", "badArgument"),
    ("mixed granularity", LIST + "&from=2024-01-01&until=2024-02-01T00:00:00Z", "badArgument"),
    ("from after until", LIST + "&from=2024-02-01&until=2024-01-01", "badArgument"),
    ("token plus argument", LIST + "&resumptionToken=x", "badArgument"),
    ("garbage token", "verb=ListIdentifiers&resumptionToken=garbage", "badResumptionToken"),
    ("unknown format", "verb=ListRecords&metadataPrefix=marc21", "cannotDisseminateFormat"),
    (
        "unknown format GetRecord",
        "verb=GetRecord&identifier={base}/index.html&metadataPrefix=marc21",
        "cannotDisseminateFormat",
    ),
    ("until before earliest", LIST + "&until=1990-01-01", "noRecordsMatch"),
    ("empty set", LIST + "&set=chemical", "noRecordsMatch"),
    ("from in the future", RECORDS + "&from=2999-01-01", "noRecordsMatch"),
    ("other host", GET + "http://elsewhere.example/index.html", "idDoesNotExist"),
    ("outside the site", GET + "{base}/../etc/passwd", "idDoesNotExist"),
    ("hidden file", GET + "{base}/.htaccess", "idDoesNotExist"),
    ("formats of unknown id", "verb=ListMetadataFormats&identifier={base}/nope", "idDoesNotExist"),
    ("ListSets token", "verb=ListSets&resumptionToken=abc", "badResumptionToken"),
]


@pytest.mark.parametrize(
    "query, code", [(q, c) for _n, q, c in CASES], ids=[n for n, _q, _c in CASES]
)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_error_case(
    oai: OAIClient, provider: RunningServer, query: str, code: str, method: str
) -> None:
    params = {k: v.format(base=provider.url) for k, v in parse_qsl(query)}
    root = oai.get(method, **params)
    errors = root.findall(f"{OAI}error")
    assert [e.get("code") for e in errors] == [code]
    request = root.find(f"{OAI}request")
    assert request.text == provider.url + "/oai"
    if code in ("badVerb", "badArgument"):
        assert dict(request.attrib) == {}
    else:
        assert dict(request.attrib) == params


def _raw(provider: RunningServer, query: str) -> requests.Response:
    resp = requests.get(f"{provider.url}/oai?{query}", timeout=10)
    assert resp.status_code == 200
    assert_valid(resp.content)
    return resp


def test_repeated_arguments(provider: RunningServer) -> None:
    # §3.6: a repeated verb is badVerb, any other repeated argument badArgument.
    assert b'code="badVerb"' in _raw(provider, "verb=ListSets&verb=ListSets").content
    resp = _raw(provider, "verb=ListIdentifiers&metadataPrefix=oai_dc&metadataPrefix=oai_dc")
    assert b'code="badArgument"' in resp.content


@pytest.mark.parametrize(
    "query",
    [
        "verb=%00%ff%fe",
        "verb=Identify&%ZZ=1",
        "&&&=&=",
        "verb=" + "A" * 5000,
        "x=" + "y" * 20000,
        "verb=GetRecord&identifier=%3C%26%22&metadataPrefix=oai_dc",
    ],
)
def test_garbage_queries_get_an_oai_error(provider: RunningServer, query: str) -> None:
    resp = _raw(provider, query)
    assert b"<error code=" in resp.content
    assert b"Traceback" not in resp.content


def test_oversized_post_body(provider: RunningServer) -> None:
    resp = requests.post(
        provider.url + "/oai", data={"verb": "Identify", "x": "y" * 100_000}, timeout=10
    )
    assert resp.status_code == 200
    assert assert_valid(resp.content).find(f"{OAI}error").get("code") == "badArgument"


def test_tampered_token(oai: OAIClient) -> None:
    token = oai.get(verb="ListIdentifiers", metadataPrefix="oai_dc").findtext(
        f".//{OAI}resumptionToken"
    )
    assert token
    flipped = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
    assert oai.error_code(verb="ListIdentifiers", resumptionToken=flipped) == "badResumptionToken"
    assert oai.error_code(verb="ListRecords", resumptionToken=token) == "badResumptionToken"
    assert oai.error_code(verb="ListIdentifiers", resumptionToken=token) is None


def test_identify(oai: OAIClient, provider: RunningServer) -> None:
    root = oai.get(verb="Identify")
    ident = root.find(f"{OAI}Identify")
    assert ident.findtext(f"{OAI}baseURL") == provider.url + "/oai"
    assert ident.findtext(f"{OAI}protocolVersion") == "2.0"
    assert ident.findtext(f"{OAI}deletedRecord") == "persistent"
    assert ident.findtext(f"{OAI}granularity") == "YYYY-MM-DDThh:mm:ssZ"
    assert ident.findtext(f"{OAI}repositoryName") == "127.0.0.1"
    assert [c.text for c in ident.findall(f"{OAI}compression")] == ["gzip", "deflate"]
    earliest = ident.findtext(f"{OAI}earliestDatestamp")
    first = oai.get(verb="ListIdentifiers", metadataPrefix="oai_dc", until=earliest)
    assert first.find(f".//{OAI}header") is not None, "earliestDatestamp must be true"


def test_list_metadata_formats(oai: OAIClient, provider: RunningServer) -> None:
    for params in ({}, {"identifier": provider.url + "/index.html"}):
        root = oai.get(verb="ListMetadataFormats", **params)
        prefixes = [e.text for e in root.iter(f"{OAI}metadataPrefix")]
        assert prefixes == ["oai_dc", "http_header", "oai_didl", "premis"]
    schema = [e.text for e in root.iter(f"{OAI}schema")][1]
    resp = requests.get(schema, timeout=10)
    assert resp.status_code == 200 and b"urn:coop-archive:http-header:1.0" in resp.content


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compression(provider: RunningServer, encoding: str) -> None:
    resp = requests.get(
        provider.url + "/oai",
        params={"verb": "Identify"},
        headers={"Accept-Encoding": encoding},
        timeout=10,
    )
    assert resp.headers["Content-Encoding"] == encoding
    assert_valid(resp.content)  # requests decoded it


def test_stylesheet(provider: RunningServer) -> None:
    resp = requests.get(provider.url + "/oai", params={"verb": "Identify"}, timeout=10)
    assert b'<?xml-stylesheet type="text/xsl" href="/oai/oai2.xsl"?>' in resp.content
    xsl = requests.get(provider.url + "/oai/oai2.xsl", timeout=10)
    assert xsl.status_code == 200
    from lxml import etree

    html = etree.XSLT(etree.fromstring(xsl.content))(etree.fromstring(resp.content))
    assert "repositoryName" in str(html) and "127.0.0.1" in str(html)
