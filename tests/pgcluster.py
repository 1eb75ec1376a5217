"""A throwaway PostgreSQL cluster for the tests: ``initdb`` into a fresh folder, ``pg_ctl``
start on a loopback port picked free and a unix socket in that folder, stopped at the end.

The binaries are Debian's ``postgresql`` package (``make sysdeps`` installs it). ``initdb``
refuses to run as root, so as root (CI containers) the cluster belongs to the ``postgres``
user the package creates: every command runs under ``runuser -u postgres --`` and the folder
is made in ``/tmp`` and given to that user (pytest's own tmp folders are private to root).
Authentication is ``trust`` on loopback only; each test gets a database of its own
(:meth:`PGCluster.new_database`), so tests never see each other's rows.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

SUPERUSER = "postgres"
_names = itertools.count(1)


class PGCluster:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="harvester-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as_root = os.geteuid() == 0

    def _run(self, program: str, *args: str) -> None:
        prefix = ["runuser", "-u", SUPERUSER, "--"] if self._as_root else []
        argv = [*prefix, _binary(program), *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")

    def start(self) -> None:
        if self._as_root:
            shutil.chown(self.root, SUPERUSER, SUPERUSER)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8")
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root}"
            " -c fsync=off -c max_connections=200"
        )
        log = str(self.root / "log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-w", "-l", log, "start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def admin_url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def new_database(self) -> str:
        """The URL of a new, empty database of this cluster."""
        name = f"t{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{name}"


def _binary(program: str) -> str:
    """``program`` from PATH, else from the newest ``/usr/lib/postgresql/N/bin`` (Debian keeps
    the server's binaries off PATH)."""
    found = shutil.which(program)
    if found:
        return found
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda f: int(f.split("/")[4]))
    if not folders:
        raise RuntimeError(f"{program} not found: install PostgreSQL (make sysdeps)")
    return f"{folders[-1]}/{program}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
