"""Production code checks what it must with statements that stay under ``python -O``: no
``assert`` in ``harvester/``, ``server_module/`` or ``coop_common/`` (``-O`` strips them, and
the condition they guarded would then pass unchecked)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("coop_common", "server_module", "harvester")


def test_no_production_module_relies_on_assert() -> None:
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for package in PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if isinstance(node, ast.Assert)
    ]
    assert not found, "assert statements vanish under python -O: " + ", ".join(found)
