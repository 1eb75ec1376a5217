"""The package layout's promises: the provider stands alone, no circle of imports, short
modules in small folders."""

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


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without
    recursion): each is a circle of imports, whatever its length."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return sorted(found)


def _loading(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """What loading each module loads first: what it imports and those modules' packages (an
    ``__init__`` runs before its submodule), less the packages it is itself loaded through."""
    loads: dict[str, set[str]] = {}
    for name, imports in graph.items():
        own = {".".join(name.split(".")[:end]) for end in range(1, name.count(".") + 1)}
        wanted = set(imports)
        for imported in imports:
            parts = imported.split(".")
            wanted.update(".".join(parts[:end]) for end in range(1, len(parts)))
        loads[name] = {i for i in wanted if i in graph and i != name and i not in own}
    return loads


def test_the_circle_finder_finds_a_circle_of_three() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]


def test_a_package_is_loaded_before_its_submodules() -> None:
    """``p/__init__`` importing ``p.x`` is no circle; ``q`` importing ``p.x`` loads ``p`` first,
    so ``p.x`` importing ``q.y`` (which loads ``q``) closes one."""
    graph = {"p": {"p.x"}, "p.x": {"p.y"}, "p.y": set(), "q": set(), "q.y": set()}
    assert _circles(_loading(graph)) == []
    graph["q"].add("p.x")
    graph["p.x"].add("q.y")
    assert _loading(graph)["p.x"] == {"p.y", "q.y", "q"}
    assert _loading(graph)["q"] == {"p", "p.x"}
    assert _circles(_loading(graph)) == [["p", "p.x", "q"]]


def test_no_import_circle_of_any_length() -> None:
    """Every import counts, at module level, in a function or under ``TYPE_CHECKING``: each
    is one edit away from a "partially initialized module" error."""
    assert _circles(_loading(_modules())) == []


def test_loading_the_settings_loads_no_storage() -> None:
    """Checking a state URL is a string's business: the settings load no SQLite backend."""
    code = (
        "import sys, harvester.settings\n"
        "print(sorted(m for m in sys.modules if m.startswith(('harvester.storage', 'sqlite3'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


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
        "import sys, harvester.cli, harvester.run.assembly, harvester.run.harvest\n"
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


def test_the_state_urls_name_each_scheme_as_its_module_does() -> None:
    from harvester.stateurl import POSTGRES, SQLITE
    from harvester.storage.postgres.state import SCHEME
    from harvester.storage.sqlite.state import SCHEME as SQLITE_SCHEME

    assert (POSTGRES, SQLITE) == (SCHEME, SQLITE_SCHEME)


def test_no_module_of_the_packages_is_over_400_lines() -> None:
    """One concept a module: none of the three packages' modules grows past 400 lines."""
    long = {
        str(path.relative_to(REPO)): lines
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long, long


def test_no_package_folder_holds_over_20_modules() -> None:
    """One family of concepts a folder: a reader finds a concept by its folder, not by a
    file-name prefix among dozens (issue 36)."""
    crowded = {
        str(folder.relative_to(REPO)): count
        for package in PACKAGES
        for folder in [REPO / package, *(REPO / package).rglob("*")]
        if (folder / "__init__.py").is_file()
        and (count := len([p for p in folder.glob("*.py") if p.name != "__init__.py"])) > 20
    }
    assert not crowded, crowded
