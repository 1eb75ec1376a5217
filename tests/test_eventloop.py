"""The event loop a run fetches on: uvloop's where installed, else the standard one."""

from __future__ import annotations

import asyncio
import sys

import pytest

from harvester import eventloop


async def _loop_module() -> str:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()).__module__


def test_runs_on_uvloop_when_installed() -> None:
    # uvloop is a declared dependency (pyproject.toml), so it is installed here
    assert eventloop.run(_loop_module()).startswith("uvloop")


def test_falls_back_to_the_standard_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    assert eventloop.loop_factory() is None
    assert eventloop.run(_loop_module()).startswith("asyncio")
