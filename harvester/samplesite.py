"""A generator of realistic, awkward web sites for tests, benchmarks and the demo.

``make_site(root, pages=N)`` writes nested folders of HTML pages that link to each other,
binary files, a style sheet with ``url()`` references, file names that need escaping (spaces,
``%``, ``#``, ``?``, non-ASCII, bytes that are not UTF-8), files linked from nowhere (the
crawler's *counting problem*), hidden files, an empty file and a symlink that leaves the root.

Paths in the manifest are relative, ``/``-separated ``str`` values as :func:`os.fsdecode` gives
them, so the non-UTF-8 name round-trips through ``os.fsencode``.
"""

from __future__ import annotations

import os
import random
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

# A file name whose bytes are not valid UTF-8 (Latin-1 "café").
NON_UTF8_NAME = os.fsdecode(b"caf\xe9.txt")
AWKWARD_NAMES = [
    "with space.html",
    "100% done.html",
    "hash#tag.html",
    "what?.html",
    "naïve résumé.html",
    "日本語.html",
    'amp&lt<quote".html',
]
MINIMAL_PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00"
    b"\x00\x00\x00IEND\xaeB`\x82"
)


@dataclass
class Manifest:
    """What a generated site holds.

    ``public``: every file a provider must list. ``linked``: the public files reachable by
    following links from ``index.html``. ``hidden``: paths that must never be listed or served
    (hidden files, and the symlink that resolves outside the root).
    """

    root: Path
    public: set[str] = field(default_factory=set)
    linked: set[str] = field(default_factory=set)
    hidden: set[str] = field(default_factory=set)

    @property
    def unlinked(self) -> set[str]:
        return self.public - self.linked


def href(from_rel: str, to_rel: str) -> str:
    """The percent-encoded relative link from one site file to another.

    >>> href("a/b.html", "a/c d.html")
    'c%20d.html'
    >>> href("a/b.html", "x/y#z.html")
    '../x/y%23z.html'
    """
    rel = os.path.relpath(to_rel, os.path.dirname(from_rel) or ".")
    return quote(os.fsencode(rel).replace(os.sep.encode(), b"/"), safe="/")


def _html(
    title: str, links: list[str], css: str | None, imgs: list[str], rng: random.Random
) -> str:
    body = "\n".join(f'<li><a href="{h}">link {i}</a></li>' for i, h in enumerate(links))
    pics = "\n".join(f'<img src="{src}" alt="">' for src in imgs)
    head_css = f'<link rel="stylesheet" href="{css}">' if css else ""
    words = " ".join(rng.choice(["archive", "harvest", "web", "record", "item"]) for _ in range(40))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{_escape(title)}</title>{head_css}</head>\n"
        f"<body><h1>{_escape(title)}</h1><p>{words}</p>\n<ul>\n{body}\n</ul>\n{pics}\n"
        "</body></html>\n"
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _page_paths(pages: int, rng: random.Random) -> list[str]:
    """index.html, pages spread over nested folders, then the awkward names (always present)."""
    folders = ["", "docs", "docs/guide", "docs/guide/deep", "news", "news/2024", "about us"]
    plain = max(pages - 1 - len(AWKWARD_NAMES), 0)
    paths = ["index.html"]
    paths += [f"{rng.choice(folders)}/page{i}.html".lstrip("/") for i in range(1, plain + 1)]
    return paths + [f"docs/{name}" for name in AWKWARD_NAMES]


def _binaries(pages: int) -> dict[str, bytes]:
    count = max(pages // 20, 1)
    files: dict[str, bytes] = {}
    for i in range(count):
        files[f"files/report{i}.pdf"] = (
            b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + os.urandom(512) + b"\n%%EOF\n"
        )
        files[f"images/pic{i}.png"] = MINIMAL_PNG
    files[f"files/{NON_UTF8_NAME}"] = b"plain text, Latin-1 name\n"
    files["files/empty.txt"] = b""
    return files


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _zip_bytes(root: Path) -> bytes:
    tmp = root.parent / f".{root.name}-bundle.zip"
    with zipfile.ZipFile(tmp, "w") as zf:
        zf.writestr("readme.txt", "bundled\n")
    data = tmp.read_bytes()
    tmp.unlink()
    return data


def make_site(
    root: str | os.PathLike[str],
    pages: int = 60,
    *,
    unlinked_share: float = 0.10,
    links_per_page: int = 10,
    seed: int = 0,
) -> Manifest:
    """Write a site under ``root`` (created if missing) and return its manifest."""
    rng = random.Random(seed)
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(root=base)

    html_paths = _page_paths(pages, rng)
    assets = _binaries(pages)
    assets["files/bundle.zip"] = _zip_bytes(base)
    assets["style/site.css"] = b""  # written below, once the images are known
    everything = html_paths + sorted(assets)
    n_unlinked = max(1, round(len(everything) * unlinked_share))
    # Never hide index.html (the entry point) or the style sheet (every page links it).
    candidates = [p for p in everything if p not in ("index.html", "style/site.css")]
    unlinked = set(rng.sample(candidates, n_unlinked))
    linked_pages = [p for p in html_paths if p not in unlinked]
    linked_assets = [p for p in sorted(assets) if p not in unlinked and p != "style/site.css"]
    images = [p for p in linked_assets if p.endswith(".png")]

    first = href("style/site.css", images[0]) if images else "none.png"
    css = f"body {{ background: url('{first}'); }}\n"
    css += "".join(
        f'h1.i{i} {{ background-image: url("{href("style/site.css", p)}"); }}\n'
        for i, p in enumerate(images[1:3])
    )
    assets["style/site.css"] = css.encode()

    outlinks = _link_graph(linked_pages, linked_assets, links_per_page, rng)
    for page in html_paths:
        targets = outlinks.get(page, rng.sample(linked_pages, min(3, len(linked_pages))))
        links = [href(page, t) for t in targets if not t.endswith(".png")]
        imgs = [href(page, t) for t in targets if t.endswith(".png")]
        title = f"Page {os.path.basename(page)}"
        html = _html(title, links, href(page, "style/site.css"), imgs, rng)
        _write(base, page, html.encode("utf-8"))
    for rel, data in assets.items():
        _write(base, rel, data)

    manifest.public = set(everything)
    manifest.linked = set(linked_pages) | set(linked_assets) | {"style/site.css"}
    _write_hidden(base, manifest)
    return manifest


def _link_graph(
    pages: list[str], assets: list[str], per_page: int, rng: random.Random
) -> dict[str, list[str]]:
    """Links such that every listed page and asset is reachable from index.html."""
    out: dict[str, list[str]] = {p: [] for p in pages}
    order = pages[:1] + rng.sample(pages[1:], len(pages) - 1)
    for i, page in enumerate(order[1:], start=1):  # a random spanning tree
        out[order[rng.randrange(i)]].append(page)
    for asset in assets:
        out[rng.choice(pages)].append(asset)
    for page in pages:
        while len(out[page]) < per_page and len(pages) > 1:
            out[page].append(rng.choice(pages))
    return out


def _write_hidden(base: Path, manifest: Manifest) -> None:
    """Files no provider may expose: dot-files, a dot-folder, and a symlink out of the root."""
    _write(base, ".htaccess", b"Deny from all\n")
    _write(base, ".git/config", b"[core]\n\tbare = false\n")
    _write(base, "docs/.secret.html", b"<title>secret</title>\n")
    outside = base.parent / f"{base.name}-outside-secret.txt"
    outside.write_text("never serve me\n")
    link = base / "files" / "escape.txt"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(outside)
    manifest.hidden |= {".htaccess", ".git/config", "docs/.secret.html", "files/escape.txt"}


def files_on_disk(root: str | os.PathLike[str]) -> set[str]:
    """Every regular file under ``root``, as manifest-style relative paths (symlinks too)."""
    base = os.fsencode(root)
    found: set[str] = set()
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            full = os.path.join(dirpath, name)
            found.add(os.fsdecode(os.path.relpath(full, base)).replace(os.sep, "/"))
    return found
