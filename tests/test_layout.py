"""The package layout's promises (issue 13): the provider stands alone, and no two modules
import each other."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("coop_common", "server_module", "harvester")


def _imports(path: Path, package: str) -> set[str]:
    """The project modules ``path`` imports, as dotted names (module level and in functions)."""
    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[: -node.level]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def _modules() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            graph[name] = _imports(path, package)
    return {
        name: {i for i in imports if i in graph and i != name} for name, imports in graph.items()
    }


def test_the_provider_imports_nothing_of_the_harvester() -> None:
    offenders = {
        name: sorted(i for i in imports if i.startswith("harvester"))
        for name, imports in _modules().items()
        if name.startswith("server_module")
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_shared_package_imports_neither_command() -> None:
    for name, imports in _modules().items():
        if name.startswith("coop_common"):
            assert not {i for i in imports if not i.startswith("coop_common")}, name


def test_loading_the_provider_loads_no_harvester_module() -> None:
    code = (
        "import sys, server_module, server_module.cli, server_module.app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'harvester'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


def test_no_two_modules_import_each_other() -> None:
    graph = _modules()
    pairs = sorted(
        (a, b) for a, imports in graph.items() for b in imports if a < b and a in graph.get(b, ())
    )
    # A package importing its own submodule (re-exports in __init__) is not a circle.
    pairs = [(a, b) for a, b in pairs if not b.startswith(a + ".") and not a.startswith(b + ".")]
    assert pairs == []


SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(TABLE|INDEX)|PRAGMA|BEGIN\s+IMMEDIATE)\b"
)


def test_only_the_storage_implementations_of_the_harvester_hold_sql() -> None:
    """The storage seam: SQL (and the sqlite3 module) in ``harvester/storage/sqlite/`` and
    ``harvester/storage/postgres/`` only, the implementations of ``storage/protocol.py``."""
    inside = [REPO / "harvester" / "storage" / name for name in ("sqlite", "postgres")]
    offenders = []
    for path in sorted((REPO / "harvester").rglob("*.py")):
        if any(folder in path.parents for folder in inside):
            continue
        text = path.read_text()
        if "execute(" in text or "import sqlite3" in text or SQL.search(text):
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_a_sqlite_harvest_loads_no_postgresql_driver() -> None:
    """psycopg costs 0.12 s of every start; an incremental run takes under a second."""
    code = (
        "import sys, harvester.cli, harvester.assembly, harvester.harvest\n"
        "from harvester.storage import open_state\n"
        "open_state('sqlite:///' + sys.argv[1])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'psycopg'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "/tmp/unused.sqlite"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert out.stdout.strip() == "[]"


def test_the_registry_names_postgresql_as_its_module_does() -> None:
    from harvester.storage.postgres.state import SCHEME
    from harvester.storage.registry import POSTGRES

    assert POSTGRES == SCHEME


def test_no_module_of_the_packages_is_over_400_lines() -> None:
    """One concept a module: none of the three packages' modules grows past 400 lines."""
    long = {
        str(path.relative_to(REPO)): lines
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long, long
