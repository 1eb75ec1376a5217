"""pywb, the reference replay system, run for real on loopback over a collection's WARC files.

pywb pins old dependencies, so it lives in a virtual environment of its own, ``.pywb/``, made
by the Makefile (`make test` makes it). ``replay(warcs_dir, index="ours")`` serves a
collection with the CDXJ files the harvester wrote (``indexes/``); ``index="pywb"`` has pywb
index the WARC files itself (``wb-manager add``), as a user who only has the WARCs would.
Replay is unframed (``framed_replay: false``); ``fetch(url, timestamp)`` asks for the
``id_`` capture, the original answer without rewriting.
"""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.servers import RunningServer, start_command

REPO = Path(__file__).resolve().parent.parent
PYWB_BIN = REPO / ".pywb" / "bin"
COLLECTION = "coll"


@dataclass(frozen=True)
class Replayed:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Wayback:
    server: RunningServer

    def fetch(self, url: str, timestamp: str = "2999", modifier: str = "id_") -> Replayed:
        """The capture of ``url`` closest to ``timestamp`` (14 digits or a prefix), as replayed."""
        address = f"{self.server.url}/{COLLECTION}/{timestamp}{modifier}/{url}"
        request = urllib.request.Request(address)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return Replayed(answer.status, dict(answer.headers.items()), answer.read())
        except urllib.error.HTTPError as error:
            return Replayed(error.code, dict(error.headers.items()), error.read())

    def cdx(self, url: str) -> list[str]:
        """pywb's own CDX lines for ``url`` (its index as it reads it)."""
        address = f"{self.server.url}/{COLLECTION}/cdx?url={url}"
        with urllib.request.urlopen(address, timeout=30) as answer:
            return [line for line in answer.read().decode().splitlines() if line]


def wb_manager(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run pywb's ``wb-manager`` in ``root``; its output is returned, never raised."""
    return subprocess.run(
        [str(PYWB_BIN / "wb-manager"), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _config(root: Path, warcs_dir: Path, index_dir: Path | None) -> None:
    lines = ["framed_replay: false", "collections:"]
    if index_dir is not None:
        lines += [
            f"  {COLLECTION}:",
            f"    archive_paths: {warcs_dir.resolve()}/",
            f"    index_paths: {index_dir.resolve()}/",
        ]
    else:
        lines.append(f"  {COLLECTION}: $auto")
    (root / "config.yaml").write_text("\n".join(lines) + "\n")


@contextmanager
def replay(warcs_dir: Path, root: Path, index: str = "ours") -> Iterator[Wayback]:
    """pywb's ``wayback`` serving ``warcs_dir`` from ``root`` (a fresh folder), until the end.

    ``index="ours"`` reads the collection's own ``indexes/`` beside ``warcs_dir``;
    ``index="pywb"`` copies the WARC files in with ``wb-manager add``, which indexes them.
    """
    root.mkdir(parents=True, exist_ok=True)
    if index == "ours":
        _config(root, warcs_dir, warcs_dir.parent / "indexes")
    else:
        _config(root, warcs_dir, None)
        made = wb_manager(root, "init", COLLECTION)
        if made.returncode != 0:
            raise RuntimeError(f"wb-manager init failed: {made.stderr.strip()}")
        warcs = sorted(str(path) for path in warcs_dir.glob("*.warc.gz"))
        added = wb_manager(root, "add", COLLECTION, *warcs)
        if added.returncode != 0:
            raise RuntimeError(f"wb-manager add failed: {added.stderr.strip()}")
    with _serving(root) as wayback:
        yield wayback


@contextmanager
def replay_wacz(wacz: Path, root: Path) -> Iterator[Wayback]:
    """pywb's ``wayback`` serving a WACZ imported with ``wb-manager add --unpack-wacz``.

    pywb's own import, as a user runs it: its output is raised if it imports no index.
    """
    root.mkdir(parents=True, exist_ok=True)
    _config(root, root, None)
    made = wb_manager(root, "init", COLLECTION)
    if made.returncode != 0:
        raise RuntimeError(f"wb-manager init failed: {made.stderr.strip()}")
    added = wb_manager(root, "add", "--unpack-wacz", COLLECTION, str(wacz))
    index = root / "collections" / COLLECTION / "indexes" / "index.cdxj"
    if added.returncode != 0 or not index.is_file():
        raise RuntimeError(f"wb-manager add --unpack-wacz failed: {added.stderr.strip()}")
    with _serving(root) as wayback:
        yield wayback


@contextmanager
def _serving(root: Path) -> Iterator[Wayback]:
    server = start_command(
        [str(PYWB_BIN / "wayback"), "-b", "{host}", "-p", "{port}", "-d", str(root)],
        ready_path=f"/{COLLECTION}/cdx?url=example.org",
        timeout=60.0,
    )
    try:
        yield Wayback(server)
    finally:
        server.stop()
