"""A hostile OAI-PMH provider, end to end through ``harvester harvest``: each misbehaviour
ends the run with one line naming the URL and the cause and a non-zero exit code, archives
nothing twice, and leaves a state from which a rerun against the healed provider completes.

The provider is the real one behind a fault (``tests/faulty_provider.py``); the client-level
cases of the same faults are in ``tests/test_oai_client.py``.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from harvester.cli import main
from harvester.storage.protocol import ListKey
from harvester.storage.sqlite.state import SQLiteState
from tests.faulty_provider import start_faulty
from tests.sites import make_site
from tests.test_harvest import records, url_of

DEADLINE = 3.0  # seconds one OAI-PMH request may take, retries included
CAUSES = {
    "truncated-second-page": "not well-formed XML",
    "entity-second-page": "DOCTYPE declarations are refused",
    "laughs-second-page": "DOCTYPE declarations are refused",
    "oversized-second-page": "exceeds",
    "trickle-second-page": "deadline",
    "token-cycle": "resumptionToken 'A' was used before in this list",
    "token-endless-same": "listed no new identifier",
    "token-endless-empty": "listed no new identifier",
}
CASES = [(fault, "get") for fault in CAUSES] + [
    ("token-cycle", "didl"),
    ("token-endless-same", "didl"),
    ("oversized-second-page", "didl"),
]


def _twice(recs: list[tuple[str, dict[str, str], bytes]]) -> list[str]:
    """URLs with more than one response record among ``recs``."""
    urls = Counter(h["WARC-Target-URI"] for t, h, _c in recs if t == "response")
    return [url for url, count in urls.items() if count > 1]


@pytest.mark.parametrize(("fault", "strategy"), CASES)
def test_hostile_provider_fails_cleanly_and_a_rerun_completes(  # type: ignore[no-untyped-def]
    fault: str, strategy: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("HARVESTER_OAI_DEADLINE", str(DEADLINE))
    monkeypatch.setenv("HARVESTER_OAI_MAX_BYTES", str(512 * 1024))  # below the oversized page
    site = make_site(tmp_path / "www", pages=40, seed=5)
    out = tmp_path / "out"
    argv = ["harvest", "--out", str(out), "--quiet", "--json", "--oai-strategy", strategy]
    with start_faulty(site.root, tmp_path, fault) as server:
        started = time.monotonic()
        code = main([*argv[:1], server.url, *argv[1:]])
        took = time.monotonic() - started
        error = capsys.readouterr().err
        first = records(out)
        urllib.request.urlopen(server.url + "/_heal", timeout=10).close()
        rerun = main([*argv[:1], server.url, *argv[1:]])
        summary = json.loads(capsys.readouterr().out)
    assert code != 0 and took < DEADLINE + 20
    assert error.startswith("harvester: ") and error.count("\n") == 1, error
    assert f"{server.url}/oai" in error and CAUSES[fault] in error, error
    assert _twice(first) == [], "the failed run archived a URL twice"
    assert rerun == 0 and summary["coverage"] == 1.0
    ids = {h["WARC-Record-ID"] for _t, h, _c in first}
    assert _twice([r for r in records(out) if r[1]["WARC-Record-ID"] not in ids]) == []
    archived = {h["WARC-Target-URI"] for t, h, _c in records(out) if t in ("response", "resource")}
    assert {url_of(server, p) for p in site.public} <= archived
    prefix = "oai_didl" if strategy == "didl" else "oai_dc"
    with SQLiteState(out / "state.sqlite") as state:
        position = state.lists.position(ListKey(f"{server.url}/oai", None, prefix))
        assert position.state == "idle" and position.token is None and position.harvested_until
