"""The site generator writes exactly what its manifest says."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote_to_bytes, urljoin

from tests.sites import NON_UTF8_NAME, files_on_disk, href, make_site


def test_manifest_matches_disk(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site", pages=80)
    assert files_on_disk(site.root) == site.public | site.hidden
    assert not site.public & site.hidden


def test_site_has_the_awkward_parts(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site", pages=40)
    names = {p.rsplit("/", 1)[-1] for p in site.public}
    for needle in (" ", "%", "#", "?", "é", "<", "&", '"'):
        assert any(needle in n for n in names), needle
    assert f"files/{NON_UTF8_NAME}" in site.public
    with __import__("pytest").raises(UnicodeDecodeError):
        os.fsencode(NON_UTF8_NAME).decode("utf-8")
    assert any(p.endswith(".pdf") for p in site.public)
    assert any(p.endswith(".png") for p in site.public)
    assert "files/bundle.zip" in site.public
    assert (site.root / "files/empty.txt").stat().st_size == 0
    assert b"url(" in (site.root / "style/site.css").read_bytes()
    assert (site.root / "files/escape.txt").is_symlink()
    escaped = (site.root / "files/escape.txt").resolve()
    assert not escaped.is_relative_to(site.root.resolve())
    assert {".htaccess", ".git/config"} <= site.hidden


def test_unlinked_share(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site", pages=200, unlinked_share=0.10)
    share = len(site.unlinked) / len(site.public)
    assert 0.08 <= share <= 0.12
    assert "index.html" in site.linked


def _links(root: Path, rel: str) -> list[str]:
    raw = (root / rel).read_bytes()
    return re.findall(r'(?:href|src)="([^"]+)"', raw.decode("utf-8")) + re.findall(
        r"url\(['\"]?([^'\")]+)", raw.decode("utf-8")
    )


def test_linked_set_is_what_following_links_reaches(tmp_path: Path) -> None:
    """A breadth-first walk over the files' own links finds exactly the manifest's linked set."""
    site = make_site(tmp_path / "site", pages=120, seed=3)
    seen, todo = {"index.html"}, ["index.html"]
    while todo:
        page = todo.pop()
        if not (page.endswith(".html") or page.endswith(".css")):
            continue
        for link in _links(site.root, page):
            target = urljoin("http://x/" + href("", page), link)[len("http://x/") :]
            rel = os.fsdecode(unquote_to_bytes(target))
            assert rel in site.public, (page, link)
            if rel not in seen:
                seen.add(rel)
                todo.append(rel)
    assert seen == site.linked


def test_same_seed_same_site(tmp_path: Path) -> None:
    a = make_site(tmp_path / "a", pages=50, seed=7)
    b = make_site(tmp_path / "b", pages=50, seed=7)
    assert a.public == b.public and a.linked == b.linked
