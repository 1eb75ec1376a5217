"""What ``oai-provider serve`` and ``index`` check before they touch anything: that the
index's folder can be written, and that the address to listen on is free.

Each failure is a :class:`~server_module.exceptions.StartupError` of one line that names the
path or address and the flag that fixes it, raised before the index is opened (SQLite would
fail deep inside with ``unable to open database file`` and no path) and before gunicorn is
started (which retries a taken port for five seconds and logs a screenful).
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

from server_module.exceptions import StartupError

INDEX_FLAG = "pass --index PATH (or set index_path) in a folder this user can write"


def check_index_folder(index_path: Path) -> None:
    """The index, its journal and its lock files can be made and written in their folder."""
    folder = index_path.parent
    if not folder.is_dir():
        raise StartupError(f"cannot make the index {index_path}: no folder {folder}; {INDEX_FLAG}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StartupError(
            f"cannot write the index {index_path}: {folder} is not writable; {INDEX_FLAG}"
        )
    if index_path.exists() and not os.access(index_path, os.R_OK | os.W_OK):
        raise StartupError(f"cannot write the index {index_path}: permission denied; {INDEX_FLAG}")


def check_address(host: str, port: int) -> None:
    """``host:port`` can be bound now, as gunicorn binds it (``SO_REUSEADDR``)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise StartupError(f"--host {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise StartupError(_bind_failure(host, port, exc)) from None


def _bind_failure(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"{host}:{port} is already in use: pass --port N (or set port) for a free port"
    if exc.errno == errno.EACCES:
        return f"{host}:{port}: permission denied (ports below 1024 need root): pass --port N"
    return f"cannot listen on {host}:{port}: {exc.strerror}; pass --host or --port"
