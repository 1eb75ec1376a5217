"""``python -m bench plugins [--files 20000] [--changed 0.02] [--seed 1]``

The provider's plugins at scale (:mod:`server_module.plugins`): a mixed site of ``--files``
files (kept in ``bench/out/plugins/``; about 70 % HTML, CSS, JavaScript and text, 20 %
images, the rest PDF, WAV, ZIP and CSV, every file's bytes its own) indexed from nothing
without plugins and with the built-in ones (each where installed), as files/s, and each
plugin's share of the tools' time (thread-seconds, summed over the runner's workers); then
``--changed`` of the files rewritten and the index refreshed: the plugins must analyse
exactly those files again, and nothing else. Last, ``oai-provider serve`` started on the site
with a fresh index (plugins at their defaults) is timed to its first ListIdentifiers answer:
the rows are listed before the analyses run.
"""

from __future__ import annotations

import argparse
import io
import random
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import wave
import zipfile
from pathlib import Path

from PIL import Image

from bench.harness import Report
from server_module.app import plugin_runner
from server_module.index.fileindex import FileIndex
from server_module.settings import load_settings
from tests.servers import HOST, free_port

OUT = Path(__file__).resolve().parent / "out" / "plugins"
FIRST_LIST_LIMIT_S = 1800.0  # a serve that has not answered by then is a failed run
BASE = "http://localhost/site"
# (share of the files, extension)
MIX = (
    (0.40, "html"),
    (0.10, "css"),
    (0.10, "js"),
    (0.10, "txt"),
    (0.08, "png"),
    (0.08, "jpg"),
    (0.04, "gif"),
    (0.04, "pdf"),
    (0.02, "wav"),
    (0.02, "zip"),
    (0.02, "csv"),
)


def content(kind: str, n: int, rng: random.Random) -> bytes:
    """A small file of ``kind`` whose bytes no other file has."""
    word = f"item {n} {rng.random()}"
    if kind in ("png", "jpg", "gif"):
        out = io.BytesIO()
        colour = (n % 256, (n // 256) % 256, rng.randrange(256))
        image = Image.new("RGB", (24, 24), colour)
        image.save(out, {"png": "PNG", "jpg": "JPEG", "gif": "GIF"}[kind])
        return out.getvalue()
    if kind == "pdf":
        return _pdf(word)
    if kind == "wav":
        out = io.BytesIO()
        with wave.open(out, "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000)
            w.writeframes(n.to_bytes(4, "big") * 400)
        return out.getvalue()
    if kind == "zip":
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            z.writestr("a.txt", word * 20)
        return out.getvalue()
    if kind == "html":
        body = f"<p>{word}</p>" * rng.randrange(5, 60)
        head = f"<!DOCTYPE html><html><head><title>{word}</title></head>"
        return f"{head}<body>{body}</body></html>".encode()
    if kind == "css":
        return f"/* {word} */ body {{ margin: {n % 40}px; }}\n".encode() * 20
    if kind == "js":
        return f"// {word}\nfunction f{n}() {{ return {n}; }}\n".encode() * 20
    if kind == "csv":
        return f"id,value\n{n},{word}\n".encode() * 10
    return f"{word}\n".encode() * rng.randrange(3, 40)


def _pdf(title: str) -> bytes:
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        b"<< /Title (" + title.encode() + b") >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 5\n0000000000 65535 f \n")
    out.writelines(b"%010d 00000 n \n" % o for o in offsets)
    out.write(b"trailer\n<< /Size 5 /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def make_mixed_site(root: Path, files: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    shutil.rmtree(root, ignore_errors=True)
    paths = []
    n = 0
    for share, kind in MIX:
        for _ in range(round(files * share)):
            path = root / f"d{n % 100:02d}" / f"f{n}.{kind}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content(kind, n, rng))
            paths.append(path)
            n += 1
    return paths


def run(argv: list[str]) -> Report:
    parser = argparse.ArgumentParser(prog="bench plugins")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--changed", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    root = OUT / "site"
    paths = make_mixed_site(root, args.files, args.seed)
    report = Report("plugins", ["run", "files", "seconds", "files/s", "analysed"])

    bare = FileIndex(_fresh(OUT / "bare.sqlite"), root, BASE).open()
    started = time.monotonic()
    stats = bare.refresh()
    bare_s = time.monotonic() - started
    assert stats is not None
    report.rows.append(["index, no plugins", stats.scanned, bare_s, stats.scanned / bare_s, 0])

    runner = plugin_runner(load_settings(docroot=root, base_url=BASE))
    assert runner is not None
    full = FileIndex(_fresh(OUT / "plugins.sqlite"), root, BASE, plugins=runner).open()
    started = time.monotonic()
    stats = full.refresh(analyse="none")  # as serve: the rows, listed at once
    rows_s = time.monotonic() - started
    made = full.analyse()  # then the analyses, in batches
    full_s = time.monotonic() - started
    assert stats is not None
    analyses_s = full_s - rows_s
    report.rows.append(
        ["plugins on: the rows committed", stats.scanned, rows_s, stats.scanned / rows_s, 0]
    )
    report.rows.append(
        [
            "plugins on: the analyses after",
            stats.scanned,
            analyses_s,
            stats.scanned / analyses_s,
            made,
        ]
    )
    first_runs = dict(runner.runs)
    tool_s = dict(runner.seconds)

    rng = random.Random(args.seed + 1)
    changed = rng.sample(paths, round(len(paths) * args.changed))
    for path in changed:
        path.write_bytes(
            path.read_bytes() + b"\n"
            if path.suffix in (".html", ".css", ".js", ".txt", ".csv")
            else content(path.suffix[1:], rng.randrange(10**9), rng)
        )
    runs_before = dict(runner.runs)
    started = time.monotonic()
    stats = full.refresh()
    again_s = time.monotonic() - started
    assert stats is not None
    report.rows.append(
        [
            f"refresh after {len(changed)} changed",
            stats.scanned,
            again_s,
            stats.scanned / again_s,
            stats.analysed,
        ]
    )
    delta = {k: runner.runs[k] - runs_before.get(k, 0) for k in runner.runs}
    expected = {
        p.label: sum(1 for path in changed if p.applies_to(_mime(path))) for p in runner.plugins
    }
    total = sum(tool_s.values()) or 1.0
    for label in runner.labels:
        report.notes.append(
            f"{label}: {first_runs.get(label, 0)} files, {tool_s.get(label, 0):.1f} thread-s,"
            f" {100 * tool_s.get(label, 0) / total:.0f} % of the tools' time;"
            f" after the change {delta.get(label, 0)} files (expected {expected[label]})"
        )
    report.notes.append(
        f"workers: {runner.workers}; slowdown of the first index: {full_s / bare_s:.1f}x"
    )
    bare.close()
    full.close()
    first_s, listed = first_list_s(root, _fresh(OUT / "served.sqlite"))
    report.rows.append(["serve: first ListIdentifiers", listed, first_s, listed / first_s, 0])
    report.figures.update(
        first_list_s=round(first_s, 2),
        rows_files_s=round(args.files / rows_s),
        analyses_files_s=round(args.files / analyses_s),
        bare_files_s=round(args.files / bare_s),
        plugin_files_s=round(args.files / full_s),
        only_changed=int(delta == expected),
    )
    return report


def first_list_s(root: Path, index: Path, cwd: Path | None = None) -> tuple[float, int]:
    """Seconds from ``oai-provider serve``'s start on ``root`` (a fresh ``index``, plugins at
    their defaults; the code in ``cwd``, else this checkout) to its first ListIdentifiers
    answer, and the completeListSize that answer gives."""
    port = free_port(HOST)
    argv = [
        sys.executable, "-m", "server_module.cli", "serve", str(root), "--index", str(index),
        "--base-url", BASE, "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    url = f"http://{HOST}:{port}/oai?verb=ListIdentifiers&metadataPrefix=oai_dc"
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode} before answering")
            if time.monotonic() - started > FIRST_LIST_LIMIT_S:
                raise TimeoutError(f"serve did not answer within {FIRST_LIST_LIMIT_S:g} s")
            try:
                with urllib.request.urlopen(url, timeout=10) as answer:
                    body = answer.read()
                break
            except OSError:
                time.sleep(0.1)
        elapsed = time.monotonic() - started
    finally:
        proc.terminate()
        proc.wait(60)
    size = re.search(rb'completeListSize="([0-9]+)"', body)
    return elapsed, int(size.group(1)) if size else body.count(b"<identifier>")


def _mime(path: Path) -> str:
    from server_module.index.filemeta import guess_mime

    return guess_mime(str(path.name).encode())


def _fresh(path: Path) -> Path:
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
