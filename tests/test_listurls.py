"""``harvester urls``: a site's complete URL list from its provider, nothing archived."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from coop_common.exitcode import ExitCode
from harvester.cli import main
from tests.conftest import start_provider
from tests.servers import free_port
from tests.sites import make_site


def test_every_public_file_is_listed_once_without_archiving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = make_site(tmp_path / "www", pages=30, seed=5)
    # page_size 7: the list spans several resumption tokens
    with start_provider(site.root, tmp_path / "index.sqlite", page_size=7) as server:
        assert main(["urls", server.url + "/"]) == ExitCode.OK
        out = capsys.readouterr()
        assert main(["urls", server.url + "/", "--json"]) == ExitCode.OK
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    urls = out.out.splitlines()
    assert len(urls) == len(set(urls)) == len(site.public)
    assert {unquote(u.removeprefix(server.url + "/"), errors="surrogateescape") for u in urls} == {
        unquote(p) for p in site.public
    }
    assert out.err == f"{len(site.public)} URLs from oai-pmh\n"
    assert [r["url"] for r in rows] == urls and all(r["datestamp"] for r in rows)


def test_a_site_without_a_provider_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/"
    assert main(["urls", url]) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert err.startswith(f"harvester: cannot reach {url}") and err.count("\n") == 1
