"""The fallback session reads the environment once per origin, as requests would each time."""

from __future__ import annotations

import pytest
import requests

from harvester.oai.transport import EnvironmentSession

URLS = [
    "http://127.0.0.1:8080/oai?verb=ListRecords&metadataPrefix=oai_dc",
    "http://127.0.0.1:8080/oai?verb=ListRecords&resumptionToken=2",
    "http://localhost:9090/oai?verb=ListRecords&resumptionToken=3",
    "https://127.0.0.1:8443/oai",
]


def test_settings_are_requests_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3129")
    monkeypatch.setenv("NO_PROXY", "localhost")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/ca.pem")
    ours, theirs = EnvironmentSession(), requests.Session()
    for url in URLS:
        for verify in (None, False):
            expected = theirs.merge_environment_settings(url, {}, True, verify, None)
            assert ours.merge_environment_settings(url, {}, True, verify, None) == expected
    given = {"http": "http://127.0.0.1:1"}
    assert (
        ours.merge_environment_settings(URLS[0], dict(given), None, None, None)["proxies"]
        == theirs.merge_environment_settings(URLS[0], dict(given), None, None, None)["proxies"]
    )


def test_the_environment_is_read_once_per_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    ours = EnvironmentSession()
    first = ours.merge_environment_settings(URLS[0], {}, None, None, None)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9999")
    again = ours.merge_environment_settings(URLS[1], {}, None, None, None)
    assert again == first and first["proxies"]["http"] == "http://127.0.0.1:3128"
