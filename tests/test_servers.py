"""The server fixture starts real servers on loopback and stops them by their own pid."""

from __future__ import annotations

import os
import sys
import urllib.request

import pytest

from tests.servers import start_command, start_wsgi


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.read().decode()


def test_wsgi_app_runs_in_its_own_process() -> None:
    with start_wsgi("tests.apps:hello", {"greeting": "hi"}) as server:
        assert server.port > 0
        greeting, pid, path = _get(server.url + "/x").split()
        assert (greeting, path) == ("hi", "/x")
        assert int(pid) == server.process.pid != os.getpid()
    assert server.process.poll() is not None
    with pytest.raises(OSError):
        _get(server.url + "/x")


def test_command_server_gets_a_port_and_stops() -> None:
    argv = [sys.executable, "-m", "http.server", "{port}", "--bind", "{host}"]
    server = start_command(argv)
    try:
        assert "Directory listing" in _get(server.url + "/")
    finally:
        code = server.stop()
    assert code is not None
    assert server.process.poll() is not None
