"""``python -m bench didl [--files N] [--large N] [--runs K]``

``--oai-strategy didl`` side by side with the default ``get`` and with wget, on two sites the
provider serves under gunicorn over loopback (everything below ``bench/out/didl/``, remade on
every run):

1. the ``bench harvest`` site: ``tests.sites.make_site`` with about ``--files`` files;
2. a site of larger files: ``--large`` files of 200 KB to 2 MB, half of them incompressible
   (as images and archives are), half text, all linked from ``index.html`` (the provider
   carries files up to its ``inline_max``, 64 KiB, by value; the larger ones by reference).

On each site the three contenders take turns, ``--runs`` times, each into a fresh folder.
Each run reports its wall seconds, the client's CPU seconds (user + system from ``wait4``),
the collection's size (the bytes of its WARC files) and the files it archived.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.harness import Report, median, run_child
from bench.harvest import Provider, providing
from harvester.samplesite import make_site

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "didl"
COLUMNS = ["metric", "get", "didl", "wget", "didl / get", "target", "met?"]
TIMEOUT = 3600.0
SETTLE = 2.1  # past the index's racy-ctime window
SIZE_TARGET = 1.1
WGET_OK = (0, 8)
CONTENDERS = ("get", "didl", "wget")


@dataclass(frozen=True)
class Run:
    seconds: float
    cpu: float  # the client's user + system seconds
    size: int  # bytes of the collection's WARC files
    files: int  # resources archived


def large_site(root: Path, count: int, seed: int = 3) -> int:
    """``count`` files of 200 KB to 2 MB, every other one incompressible, linked from
    ``index.html``; returns how many public files the site has."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    words = [
        bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(2000)
    ]
    links = []
    for n in range(count):
        size = rng.randint(200_000, 2_000_000)
        if n % 2:
            name, data = f"media/file-{n}.bin", rng.randbytes(size)
        else:
            name, data = f"docs/file-{n}.txt", _text(rng, words, size)
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_bytes(data)
        links.append(f'<a href="{name}">{name}</a>')
    (root / "index.html").write_text("<!DOCTYPE html><title>large</title>\n" + "\n".join(links))
    return count + 1


def _text(rng: random.Random, words: list[bytes], size: int) -> bytes:
    chunk = b" ".join(rng.choices(words, k=20_000))
    return (chunk * (size // len(chunk) + 1))[:size]


# -- the contenders ---------------------------------------------------------------------


def ours(provider: Provider, out: Path, strategy: str) -> Run:
    argv = [sys.executable, "-m", "harvester.cli", "harvest", provider.url, "--out", str(out),
            "--quiet", "--json", "--oai-strategy", strategy]  # fmt: skip
    child = run_child(argv, *_logs(out.name), timeout=TIMEOUT, cwd=REPO)
    summary = json.loads(child.stdout)
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    return Run(child.seconds, _cpu(child.usage), _size(warcs), int(summary["fetched"]))


def wget(provider: Provider, folder: Path) -> Run:
    """A crawl from index.html into one WARC, keeping no files (as ``bench harvest``)."""
    folder.mkdir(parents=True)
    argv = ["wget", "-r", "-l", "inf", "-np", "-e", "robots=off", "-q", "-nd", "--delete-after",
            f"--warc-file={folder / 'wget'}", f"--warc-tempdir={folder}", "-P", str(folder),
            f"{provider.url}/index.html"]  # fmt: skip
    child = run_child(argv, *_logs(folder.name), timeout=TIMEOUT, ok=WGET_OK, cwd=REPO)
    warcs = sorted(folder.glob("*.warc.gz"))
    return Run(child.seconds, _cpu(child.usage), _size(warcs), _responses(warcs))


def _logs(name: str) -> tuple[Path, Path]:
    return OUT / "logs" / f"{name}.out", OUT / "logs" / f"{name}.err"


def _cpu(usage: object) -> float:
    return float(usage.ru_utime + usage.ru_stime)  # type: ignore[attr-defined]


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def _responses(paths: list[Path]) -> int:
    from warcio.archiveiterator import ArchiveIterator

    count = 0
    for path in paths:
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                http = record.http_headers
                count += record.rec_type == "response" and http.get_statuscode() == "200"
    return count


def contest(name: str, root: Path, runs: int, workers: int, threads: int) -> dict[str, list[Run]]:
    """Every contender ``runs`` times in turn against one provider of ``root``."""
    got: dict[str, list[Run]] = {c: [] for c in CONTENDERS}
    with providing(root, workers, threads) as provider:
        for run in range(1, runs + 1):
            for contender in CONTENDERS:
                folder = OUT / f"{name}-{contender}-{run}"
                if contender == "wget":
                    got[contender].append(wget(provider, folder))
                else:
                    got[contender].append(ours(provider, folder, contender))
    return got


# -- the report -------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench didl", description=__doc__)
    parser.add_argument("--files", type=int, default=20_000, help="the harvest site's size")
    parser.add_argument("--large", type=int, default=200, help="files of the large-file site")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs per contender")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = parse_args(argv)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    small = make_site(OUT / "site-small", pages=max(1, round(args.files / 1.1)), seed=1)
    large_files = large_site(OUT / "site-large", args.large)
    time.sleep(SETTLE)
    report = Report("didl", COLUMNS)
    sites = [("small", OUT / "site-small", len(small.public)), ("large", OUT / "site-large",
             large_files)]  # fmt: skip
    load = []
    for name, root, files in sites:
        got = contest(name, root, args.runs, args.workers, args.threads)
        load.append(os.getloadavg()[0])
        report.rows += _rows(f"{name} site, {files:,} files", got)
        report.figures |= _figures(name, got)
    report.notes += _notes(args, load)
    return report


def _med(runs: list[Run], what: str) -> float:
    return median([float(getattr(r, what)) for r in runs])


def _rows(site: str, got: dict[str, list[Run]]) -> list[list[object]]:
    get_s, didl_s, wget_s = (_med(got[c], "seconds") for c in CONTENDERS)
    get_b, didl_b, wget_b = (_med(got[c], "size") / 1e6 for c in CONTENDERS)
    files = [min(r.files for r in got[c]) for c in CONTENDERS]
    cpu = [1000 * _med(got[c], "cpu") / max(1, f) for c, f in zip(CONTENDERS, files, strict=True)]
    return [
        [f"{site}: wall s", get_s, didl_s, wget_s, didl_s / get_s, "< 1x", didl_s < get_s],
        [f"{site}: collection MB", get_b, didl_b, wget_b, didl_b / get_b,
         f"<= {SIZE_TARGET:g}x", didl_b / get_b <= SIZE_TARGET],
        [f"{site}: client CPU ms per file", *cpu, cpu[1] / cpu[0], "", ""],
        [f"{site}: files archived (fewest of the runs)", *files, "", "", ""],
    ]  # fmt: skip


def _figures(name: str, got: dict[str, list[Run]]) -> dict[str, float | int | str]:
    get_s, didl_s = _med(got["get"], "seconds"), _med(got["didl"], "seconds")
    get_b, didl_b = _med(got["get"], "size"), _med(got["didl"], "size")
    return {
        f"{name}_time_ratio": round(didl_s / get_s, 3),
        f"{name}_size_ratio": round(didl_b / get_b, 3),
    }


def _notes(args: argparse.Namespace, load: list[float]) -> list[str]:
    return [
        f"{os.cpu_count()} CPUs, shared; 1-minute load average after each site: "
        + ", ".join(f"{v:.2f}" for v in load),
        f"Medians of {args.runs} runs per contender, taking turns (get, didl, wget); provider: "
        f"oai-provider serve under gunicorn, {args.workers} workers x {args.threads} threads; "
        "ours with the default settings.",
        "wall s: start to exit of the process. CPU: the client's user + system seconds from "
        "wait4 (not the provider's), per file archived. Collection: the bytes of the WARC "
        "files (ours: warcs/*.warc.gz, state and indexes not counted; wget: its .warc.gz).",
        "wget's count is its HTTP 200 responses; it finds only what index.html links to.",
        "git: " + _commit(),
    ]


def _commit() -> str:
    head = ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]
    try:
        return subprocess.run(head, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
