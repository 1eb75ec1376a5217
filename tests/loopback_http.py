"""A scripted HTTP/1.1 server on loopback, in threads, that sees every connection and request.

``ScriptedHttp(answer)`` calls ``answer(request)`` for each request it reads (a
:class:`Request`: the connection's number, the request's number on it and its head as
received) and sends the bytes returned, keeping the connection open for the next request;
``CLOSE`` closes the connection without answering, and an :class:`Action` runs on the socket
(to trickle a body). With ``tls`` (a server-side ``ssl.SSLContext``) every connection is
wrapped in TLS first. Each connection serves at most ``MAX_REQUESTS`` requests and waits at
most ``IDLE`` seconds for one. :func:`tls_files` makes a CA and a certificate for 127.0.0.1
signed by it with the ``openssl`` command.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

HOST = "127.0.0.1"
MAX_REQUESTS = 50
IDLE = 5.0
CLOSE = b""


@dataclass(frozen=True)
class Request:
    connection: int  # 0 for the first connection accepted
    number: int  # 0 for the connection's first request
    head: bytes  # request line and header lines, the blank line excluded

    @property
    def line(self) -> str:
        return self.head.split(b"\r\n", 1)[0].decode("latin-1")

    @property
    def fields(self) -> list[tuple[str, str]]:
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        return [(k, v.strip()) for k, _, v in (line.partition(":") for line in lines)]


Action = Callable[[socket.socket], None]
Answer = Callable[[Request], bytes | Action]


def response(body: bytes, *fields: str, status: str = "200 OK") -> bytes:
    """A complete HTTP/1.1 response with a Content-Length and ``fields``."""
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *fields, "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def trickle(body: bytes, interval: float, limit: float) -> Action:
    """Headers at once, then one body byte every ``interval`` s, for at most ``limit`` s."""

    def act(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        stop = time.monotonic() + limit
        for byte in body:
            if time.monotonic() > stop:
                return
            conn.sendall(bytes([byte]))
            time.sleep(interval)

    return act


class ScriptedHttp:
    """The server; ``with`` it to stop it. ``requests`` lists every request read, in order."""

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None) -> None:
        self._answer = answer
        self._tls = tls
        self.requests: list[Request] = []
        self.connections = 0
        self._open: list[socket.socket] = []
        self._stopping = threading.Event()
        self._listener = socket.create_server((HOST, 0))
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://{HOST}:{self.port}"

    def __enter__(self) -> ScriptedHttp:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stopping.set()
        for conn in list(self._open):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # wakes its thread's recv()
        for thread in list(self._threads):
            thread.join(IDLE + 1)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._serve, args=(conn, self.connections))
            self.connections += 1
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        conn.settimeout(IDLE)
        self._open.append(conn)
        try:
            if self._tls is not None:
                conn = self._tls.wrap_socket(conn, server_side=True)
                self._open.append(conn)
            self._converse(conn, number)
        except OSError:  # the client went away, or refused our certificate
            pass
        finally:
            conn.close()

    def _converse(self, conn: socket.socket, number: int) -> None:
        pending = b""
        for count in range(MAX_REQUESTS):
            while b"\r\n\r\n" not in pending:
                data = conn.recv(65536)
                if not data or self._stopping.is_set():
                    return
                pending += data
            head, _, pending = pending.partition(b"\r\n\r\n")
            request = Request(number, count, head)
            self.requests.append(request)
            answer = self._answer(request)
            if answer == CLOSE:
                return
            if isinstance(answer, bytes):
                conn.sendall(answer)
            else:
                answer(conn)
                return


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA's certificate (PEM)
    cert: Path  # the server's certificate for 127.0.0.1 (PEM)
    key: Path  # its private key

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context


_EXTENSIONS = """\
subjectAltName = IP:127.0.0.1
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
"""


def tls_files(folder: Path) -> TlsFiles:
    """A throwaway CA and a server certificate for 127.0.0.1 it signed, in ``folder``."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, csr, ext = (folder / n for n in ("server.pem", "server.key", "server.csr", "ext"))
    ext.write_text(_EXTENSIONS)
    _openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2",
             "-subj", "/CN=coop-archive test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    _openssl("req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert, "-days", "2", "-extfile", ext)  # fmt: skip
    return TlsFiles(ca, cert, key)


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=30)
