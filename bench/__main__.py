"""``python -m bench NAME [ARGS...]``: run one benchmark, print its table and a JSON line."""

from __future__ import annotations

import compileall
import importlib
import pkgutil
import sys
from pathlib import Path

from bench.harness import Report

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("harvester", "server_module", "bench", "tests")
NOT_BENCHMARKS = {"harness", "fetchfloor", "crawlprofile", "browserpeer"}  # parts of crawl


def available() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name
        for m in pkgutil.iter_modules([str(here)])
        if m.name not in NOT_BENCHMARKS and not m.name.startswith("_")
    )


def byte_compile() -> None:
    """Byte-compile the project's modules, as installing a wheel does.

    This machine sets ``PYTHONDONTWRITEBYTECODE``, and the project is installed editable, so
    without this every child process (each harvest, each provider worker) would compile the
    project's modules from source again: about 0.1 s per start that an installed tool never
    pays, a fifth of an incremental harvest's start-up. Python still reads ``.pyc`` files
    under that setting; it only does not write them.
    """
    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    names = available()
    if not args or args[0] in ("-h", "--help", "--list"):
        print("usage: python -m bench NAME [ARGS...]\nbenchmarks: " + (", ".join(names) or "none"))
        return 0 if args else 2
    if args[0] not in names:
        print(f"unknown benchmark {args[0]!r}; available: {', '.join(names) or 'none'}")
        return 2
    byte_compile()
    report: Report = importlib.import_module(f"bench.{args[0]}").run(args[1:])
    print(f"## {report.name}\n\n{report.table()}\n")
    for note in report.notes:
        print(f"- {note}")
    print(report.json_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
