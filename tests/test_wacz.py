"""``harvester wacz``: a real harvest packaged as WACZ 1.1.1, checked by the ``wacz`` tool's
own validator and read back: every WARC, every capture indexed, every HTML page listed."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from coop_common.exitcode import ExitCode
from harvester.cli import main
from tests.harvested import Harvested, harvested
from tests.pywb import replay_wacz

WACZ = str(Path(sys.executable).with_name("wacz"))


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Harvested, Path]]:
    tmp = tmp_path_factory.mktemp("wacz")
    with harvested(tmp) as found:
        target = tmp / "collection.wacz"
        assert main(["wacz", str(found.out), "--to", str(target), "--quiet"]) == ExitCode.OK
        yield found, target


def test_the_wacz_tool_validates_it(packaged: tuple[Harvested, Path]) -> None:
    _, target = packaged
    done = subprocess.run(
        [WACZ, "validate", "-f", str(target)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Version detected as 1.1.1" in done.stdout


def test_it_holds_the_warcs_index_and_pages_with_their_digests(
    packaged: tuple[Harvested, Path],
) -> None:
    found, target = packaged
    with zipfile.ZipFile(target) as zf:
        package = json.loads(zf.read("datapackage.json"))
        assert package["wacz_version"] == "1.1.1"
        for resource in package["resources"]:
            data = zf.read(resource["path"])
            assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert resource["bytes"] == len(data)
        warcs = sorted(p.name for p in (found.out / "warcs").glob("*.warc.gz"))
        assert sorted(n for n in zf.namelist() if n.startswith("archive/")) == [
            f"archive/{w}" for w in warcs
        ]
        assert zf.getinfo(f"archive/{warcs[0]}").compress_type == zipfile.ZIP_STORED
        assert zf.getinfo("indexes/index.cdx.gz").compress_type == zipfile.ZIP_STORED
        lines = gzip.decompress(zf.read("indexes/index.cdx.gz")).decode().splitlines()
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()]
    assert len(lines) == len(found.site.public) + 1  # and the seed, the root (listed/seed.py)
    assert pages[0] == {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    html = {f"{found.url}/{p}" for p in found.site.public if p.endswith(".html")}
    html.add(f"{found.url}/")  # the seed, the site's root (harvester/listed/seed.py)
    assert {_plain(p["url"]) for p in pages[1:]} == {_plain(u) for u in html}
    home = next(p for p in pages[1:] if p["url"] == f"{found.url}/index.html")
    title = (found.site.root / "index.html").read_text().split("<title>")[1].split("</title>")[0]
    assert home["title"] == title and home["ts"].endswith("Z")


def test_pywb_imports_it_and_replays_every_url(
    packaged: tuple[Harvested, Path], tmp_path: Path
) -> None:
    """``wb-manager add --unpack-wacz`` finds the index; every file replays with its bytes."""
    found, target = packaged
    with replay_wacz(target, tmp_path / "pywb") as wayback:
        for path in found.site.public:
            answer = wayback.fetch(f"{found.url}/{quote(os.fsencode(path), safe='/')}")
            assert answer.status == 200, path
            assert answer.body == (found.site.root / path).read_bytes(), path


def _plain(url: str) -> str:
    from urllib.parse import unquote

    return unquote(url)


def test_a_folder_that_is_no_collection_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["wacz", str(tmp_path), "--to", str(tmp_path / "x.wacz"), "--quiet"])
    assert code == ExitCode.FAILED
    assert capsys.readouterr().err.startswith(f"harvester: {tmp_path}: not a collection")
    assert not (tmp_path / "x.wacz").exists()
