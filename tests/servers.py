"""Start real servers on free loopback ports for tests and benchmarks.

``start_wsgi("pkg.module:factory", kwargs)`` runs a WSGI application in a child process that
binds port 0 itself and reports the port it got, so there is no race for a port.
``start_command([... "{port}" ...])`` runs any server command (gunicorn, nginx, the project's
own CLI) on a port picked just before. Both wait until the server answers HTTP and stop it by
the pid they started. ``serve_pages({path: html})`` serves a few pages from a thread of the
test's own process, which can then see which paths were asked for, as they are.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"


@dataclass
class RunningServer:
    process: subprocess.Popen[bytes]
    host: str
    port: int
    log: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM the server's own pid, then SIGKILL it if it lingers; return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        return self.process.returncode

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port(host: str = HOST) -> int:
    """A port the kernel just handed out for ``host`` (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def wait_until_answers(url: str, process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """Poll ``url`` until any HTTP answer arrives; fail early if the process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before answering {url}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # any HTTP status means it is up
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"no answer from {url} within {timeout}s")


def start_wsgi(
    factory: str,
    kwargs: dict[str, object] | None = None,
    *,
    host: str = HOST,
    ready_path: str = "/",
    env: dict[str, str] | None = None,
    timeout: float = 20.0,
) -> RunningServer:
    """Run ``factory(**kwargs)`` (a ``module:callable`` returning a WSGI app) in a child process."""
    cmd = [sys.executable, "-m", "tests.wsgi_child", factory, json.dumps(kwargs or {}), host]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, env={**os.environ, **(env or {})}, cwd=_repo_root()
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().strip()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"WSGI child did not report a port: {line!r}")
    server = RunningServer(proc, host, int(line.split()[1]))
    wait_until_answers(server.url + ready_path, proc, timeout)
    return server


def start_command(
    argv: list[str],
    *,
    host: str = HOST,
    ready_path: str = "/",
    env: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> RunningServer:
    """Run a server command; ``{port}`` and ``{host}`` in its arguments are filled in."""
    port = free_port(host)
    cmd = [arg.format(port=port, host=host) for arg in argv]
    proc = subprocess.Popen(
        cmd, env={**os.environ, **(env or {})}, cwd=_repo_root(), stdout=subprocess.DEVNULL
    )
    server = RunningServer(proc, host, port)
    try:
        wait_until_answers(server.url + ready_path, proc, timeout)
    except Exception:
        server.stop()
        raise
    return server


@dataclass
class PagesServer:
    url: str
    pages: Mapping[str, bytes]
    asked: dict[str, threading.Event] = field(default_factory=dict)

    def event(self, path: str) -> threading.Event:
        """Set once ``path`` has been asked for."""
        return self.asked.setdefault(path, threading.Event())


class _PagesHandler(http.server.BaseHTTPRequestHandler):
    server: _PagesHTTPServer

    def do_GET(self) -> None:
        pages = self.server.site
        pages.event(self.path).set()
        body = pages.pages.get(self.path)
        self.send_response(404 if body is None else 200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: object) -> None:
        return None


class _PagesHTTPServer(http.server.ThreadingHTTPServer):
    site: PagesServer


@contextmanager
def serve_pages(pages: Mapping[str, bytes], host: str = HOST) -> Iterator[PagesServer]:
    """``pages`` (path to HTML) served on a thread, 404 for any other path."""
    httpd = _PagesHTTPServer((host, 0), _PagesHandler)
    httpd.site = PagesServer(f"http://{host}:{httpd.server_address[1]}", pages)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.site
    finally:
        httpd.shutdown()
        httpd.server_close()


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wait_analysed(index: Path, seconds: float = 120.0) -> None:
    """Wait until a provider's plugins have analysed every file (the index then records its
    plugin set)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with closing(sqlite3.connect(index)) as conn:
            done = conn.execute("SELECT 1 FROM meta WHERE key = 'plugin_labels'").fetchone()
        if done:
            return
        time.sleep(0.05)
    raise TimeoutError(f"{index}: the plugins did not finish within {seconds} s")
