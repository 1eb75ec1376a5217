"""Symlinks out of the document root (issue 12, #11): unpublished by default and reported so,
published for the folders an operator allows with ``--allow-outside``.

The site is laid out as Debian's documentation is: ``_static/jquery.js`` links to the system's
shared JavaScript folder.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from server_module.settings import load_settings
from tests.conftest import OAI, OAIClient, start_provider
from tests.servers import RunningServer

JQUERY = b"/*! jQuery */ window.jQuery = 1;"
SECRET = b"never serve me"
DIDL = "{urn:mpeg:mpeg21:2002:02-DIDL-NS}"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(document root, shared folder) with links from the one into the other and beyond."""
    shared = tmp_path / "javascript"
    (shared / "jquery").mkdir(parents=True)
    (shared / "jquery" / "jquery.js").write_bytes(JQUERY)
    (shared / ".cache").mkdir()
    (shared / ".cache" / "token.js").write_bytes(SECRET)
    (shared / "jquery" / "jquery.js~").write_bytes(SECRET)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_bytes(SECRET)
    root = tmp_path / "www"
    (root / "_static").mkdir(parents=True)
    (root / "index.html").write_bytes(b"<title>docs</title>")
    (root / "_static" / "jquery.js").symlink_to(shared / "jquery" / "jquery.js")
    (root / "_static" / "js").symlink_to(shared / "jquery")  # a linked folder
    (root / "_static" / "token.js").symlink_to(shared / ".cache" / "token.js")
    (root / "_static" / "backup.js").symlink_to(shared / "jquery" / "jquery.js~")
    (root / "_static" / "passwd").symlink_to(tmp_path / "etc" / "passwd")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "jquery.js").symlink_to(shared / "jquery" / "jquery.js")
    return root, shared


def run_index(root: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "server_module.cli", "index", str(root)]
    argv += ["--base-url", "http://www.example.org", "--index", str(tmp_path / "i.sqlite")]
    return subprocess.run(
        [*argv, *extra], capture_output=True, text=True, timeout=60, check=True, cwd=os.getcwd()
    )


def test_index_reports_the_links_it_does_not_follow(
    layout: tuple[Path, Path], tmp_path: Path
) -> None:
    root, shared = layout
    out = run_index(root, tmp_path).stdout
    assert "5 symlinks lead outside the document root and are not published" in out
    assert "--allow-outside" in out
    for link, target in [
        ("_static/backup.js", shared / "jquery" / "jquery.js~"),
        ("_static/jquery.js", shared / "jquery" / "jquery.js"),
        ("_static/js", shared / "jquery"),
        ("_static/token.js", shared / ".cache" / "token.js"),
        ("_static/passwd", tmp_path / "etc" / "passwd"),
    ]:
        assert f"  {link} -> {target}\n" in out
    assert ".hidden" not in out  # never walked into: not the site's content anyway


def test_index_with_the_folder_allowed_reports_only_the_rest(
    layout: tuple[Path, Path], tmp_path: Path
) -> None:
    root, shared = layout
    out = run_index(root, tmp_path, "--allow-outside", str(shared)).stdout
    assert "1 symlink leads outside the document root and is not published" in out
    assert f"  _static/passwd -> {tmp_path / 'etc' / 'passwd'}\n" in out
    assert ": 3 added," in out  # index.html, _static/jquery.js, _static/js/jquery.js


@pytest.fixture(params=["argument", "environment"])
def provider(
    request: pytest.FixtureRequest, layout: tuple[Path, Path], tmp_path: Path
) -> Iterator[RunningServer]:
    root, shared = layout
    index = tmp_path / "index.sqlite"
    if request.param == "argument":
        server = start_provider(root, index, allow_outside=[str(shared)])
    else:
        env = {"OAI_PROVIDER_ALLOW_OUTSIDE": f"/nonexistent{os.pathsep}{shared}"}
        server = start_provider(root, index, env=env)
    with server:
        yield server


def test_an_allowed_folder_is_indexed_listed_and_served(
    provider: RunningServer, layout: tuple[Path, Path]
) -> None:
    oai = OAIClient(provider)
    listed = oai.get(verb="ListIdentifiers", metadataPrefix="oai_dc")
    identifiers = {e.text for e in listed.iter(f"{OAI}identifier")}
    assert identifiers == {
        f"{provider.url}/{p}" for p in ("index.html", "_static/jquery.js", "_static/js/jquery.js")
    }
    for path in ("_static/jquery.js", "_static/js/jquery.js"):
        resp = requests.get(f"{provider.url}/{path}", timeout=10)
        assert (resp.status_code, resp.content) == (200, JQUERY)
        record = oai.get(
            verb="GetRecord", identifier=f"{provider.url}/{path}", metadataPrefix="oai_didl"
        )
        inline = record.find(f".//{DIDL}Resource[@encoding='base64']")
        assert inline is not None and base64.b64decode(inline.text or "") == JQUERY


@pytest.mark.parametrize(
    "path",
    [
        "_static/token.js",
        "_static/backup.js",
        "_static/passwd",
        ".hidden/jquery.js",
        "_static/js/jquery.js~",
    ],
)
def test_hidden_excluded_or_unallowed_targets_stay_unpublished(
    provider: RunningServer, path: str
) -> None:
    resp = requests.get(f"{provider.url}/{path}", timeout=10)
    assert resp.status_code == 404
    assert SECRET not in resp.content


def test_a_link_swapped_out_of_the_allowed_folder_is_refused(
    provider: RunningServer, layout: tuple[Path, Path], tmp_path: Path
) -> None:
    root, _shared = layout
    link = root / "_static" / "jquery.js"
    fresh = link.with_name("swap")
    fresh.symlink_to(tmp_path / "etc" / "passwd")
    os.replace(fresh, link)
    resp = requests.get(f"{provider.url}/_static/jquery.js", timeout=10)
    assert resp.status_code == 404
    assert SECRET not in resp.content


def test_the_settings_file_and_environment_give_the_allow_list(tmp_path: Path) -> None:
    config = tmp_path / "provider.toml"
    config.write_text('allow_outside = ["/usr/share/javascript", "/srv/shared"]\n')
    common = {"docroot": tmp_path, "base_url": "http://h", "environ": {}}
    from_file = load_settings(config_file=config, **common)  # type: ignore[arg-type]
    assert from_file.allow_outside == (Path("/usr/share/javascript"), Path("/srv/shared"))
    env = {"OAI_PROVIDER_ALLOW_OUTSIDE": f"/a{os.pathsep}/b,c"}
    from_env = load_settings(docroot=tmp_path, base_url="http://h", environ=env)
    assert from_env.allow_outside == (Path("/a"), Path("/b,c"))
    assert load_settings(**common).allow_outside == ()  # type: ignore[arg-type]
