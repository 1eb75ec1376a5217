"""The OAI-PMH client's default transport: kept-alive ``http.client`` connections.

A list asks one server for page after page; ``requests`` and urllib3 spend more CPU on each
request than ``http.client`` does sending it and reading its head. :class:`ConnectionTransport`
keeps one idle connection per origin (several when threads share it) and sends each GET on it
by hand, with the head requests would send, recorded as sent (``Host`` first). What the
environment asks of an experienced requests user is left to requests: a URL with credentials,
an origin with a ``.netrc`` entry or one the environment names a proxy for (``http_proxy``,
``https_proxy``, ``all_proxy`` less ``no_proxy``: :func:`requests.utils.get_environ_proxies`,
over :func:`urllib.request.getproxies` and ``proxy_bypass``) goes through the fallback
transport, a requests session. The environment is read once per origin.

- **URLs** are prepared by requests' own code (:meth:`requests.PreparedRequest.prepare_url`:
  IDNA, quoting, the query), so the URL asked for and archived is the one requests would ask for.
- **TLS** is verified as requests verifies it: against ``REQUESTS_CA_BUNDLE`` or
  ``CURL_CA_BUNDLE`` when set, else certifi's bundle, host names checked, TLS 1.2 at least.
- **Time**: ``timeout`` bounds the connect and each read of the socket, as requests' does.
- **Keep-alive race**: a kept connection the server has closed meanwhile fails the request
  before its response begins; the request (a GET) is sent again once on a new connection.
  That is not a retry of :class:`~harvester.oai.httpclient.Http`'s: nothing was answered.
- A response whose body is not read to its end closes its connection; only a finished one,
  that the server did not ask to close, is kept.
- A body shorter than its ``Content-Length`` raises ``http.client.IncompleteRead`` (``read1``
  of http.client returns b"" instead).
"""

from __future__ import annotations

import http.client
import os
import ssl
import threading
from collections.abc import Callable, Mapping
from functools import partial
from urllib.parse import SplitResult, urlsplit

import certifi
import requests
from requests.utils import get_environ_proxies, get_netrc_auth, select_proxy

from harvester.exceptions import PermanentFetchError, TransientFetchError
from harvester.http.exchange import Header
from harvester.oai.transport import (
    EnvironmentSession,
    Response,
    SessionTransport,
    Transport,
    peer_address,
)

_Origin = tuple[str, str, int]  # scheme, host, port
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What a kept connection closed by the server raises before any byte of the response.
_CLOSED = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def kept_alive() -> ConnectionTransport:
    """The OAI-PMH client's default transport: kept-alive connections, and a session reading
    the environment once per origin for what requests must handle."""
    return ConnectionTransport(SessionTransport(EnvironmentSession()))


def tls_context() -> ssl.SSLContext:
    """A client context verifying servers against the CA bundle requests would use."""
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    bundle = bundle or certifi.where()
    if os.path.isdir(bundle):
        context = ssl.create_default_context(capath=bundle)
    else:
        context = ssl.create_default_context(cafile=bundle)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class ConnectionTransport:
    """A :class:`~harvester.oai.transport.Transport` on kept-alive ``http.client``
    connections; ``fallback`` sends what the environment asks requests to handle."""

    def __init__(self, fallback: Transport) -> None:
        self.fallback = fallback
        self._direct: dict[tuple[str, str], bool] = {}
        self._idle: dict[_Origin, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None

    def send(
        self, url: str, params: Mapping[str, str] | None, headers: Mapping[str, str], timeout: float
    ) -> Response:
        prepared = requests.PreparedRequest()
        try:
            prepared.prepare_url(url, params)
            if prepared.url is None:
                raise ValueError("no URL was prepared")
            direct = self._is_direct(urlsplit(prepared.url))
        except (requests.RequestException, ValueError) as exc:  # a port out of range too
            raise PermanentFetchError(f"cannot request {url}: {exc}") from exc
        if not direct:
            return self.fallback.send(url, params, headers, timeout)
        return self._exchange(prepared.url, prepared.path_url, headers, timeout)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()
        self.fallback.close()

    def _is_direct(self, split: SplitResult) -> bool:
        """Whether requests would send to this origin without a proxy or credentials."""
        key = (split.scheme, split.netloc)
        if key not in self._direct:
            url = f"{split.scheme}://{split.netloc}/"
            self._direct[key] = (
                split.scheme in _DEFAULT_PORTS
                and "@" not in split.netloc
                and select_proxy(url, get_environ_proxies(url)) is None
                and not get_netrc_auth(url)
            )
        return self._direct[key]

    def _exchange(
        self, url: str, target: str, headers: Mapping[str, str], timeout: float
    ) -> Response:
        split = urlsplit(url)
        origin = (split.scheme, split.hostname or "", split.port or _DEFAULT_PORTS[split.scheme])
        sent = (("Host", _host(origin)), *headers.items())
        connection, reused = self._connection(origin, timeout)
        try:
            try:
                response = _request(connection, target, sent)
            except _CLOSED:
                if not reused:
                    raise
                connection.close()  # closed by the server while kept: sent once more
                connection = self._new(origin, timeout)
                response = _request(connection, target, sent)
        except ssl.SSLError as exc:
            connection.close()
            raise PermanentFetchError(f"TLS failure for {url}: {exc}") from exc
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise TransientFetchError(f"cannot reach {url}: {exc}") from exc
        except ValueError as exc:  # a header or target http.client refuses to send
            connection.close()
            raise PermanentFetchError(f"cannot request {url}: {exc}") from exc
        release = partial(self._release, origin)
        return _ConnectionResponse(url, sent, response, connection, release)

    def _connection(
        self, origin: _Origin, timeout: float
    ) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection to ``origin`` and True, else a new one and False."""
        with self._lock:
            idle = self._idle.get(origin)
            connection = idle.pop() if idle else None
        if connection is None:
            return self._new(origin, timeout), False
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection, True

    def _new(self, origin: _Origin, timeout: float) -> http.client.HTTPConnection:
        scheme, host, port = origin
        if scheme == "http":
            return http.client.HTTPConnection(host, port, timeout=timeout)
        if self._context is None:
            self._context = tls_context()
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=self._context)

    def _release(self, origin: _Origin, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.setdefault(origin, []).append(connection)


def _host(origin: _Origin) -> str:
    """The Host field http.client would send: the port only when not the scheme's own."""
    scheme, host, port = origin
    name = f"[{host}]" if ":" in host else host
    return name if port == _DEFAULT_PORTS[scheme] else f"{name}:{port}"


def _request(
    connection: http.client.HTTPConnection, target: str, sent: tuple[Header, ...]
) -> http.client.HTTPResponse:
    connection.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
    for name, value in sent:
        connection.putheader(name, value)
    connection.endheaders()
    peer = peer_address(connection.sock)  # before a closing response takes the socket away
    response = connection.getresponse()
    response.peer_ip = peer  # type: ignore[attr-defined]
    return response


class _ConnectionResponse:
    def __init__(
        self,
        url: str,
        sent: tuple[Header, ...],
        response: http.client.HTTPResponse,
        connection: http.client.HTTPConnection,
        release: Callable[[http.client.HTTPConnection], None],
    ) -> None:
        self.url = url
        self.status = response.status
        self.reason = response.reason or ""
        self.version = response.version
        self.headers: tuple[Header, ...] = tuple(response.msg.items())
        self.request_headers = sent
        self.peer_ip: str | None = getattr(response, "peer_ip", None)
        self._response = response
        self._connection = connection
        self._release = release
        self._finished = False

    def header(self, name: str) -> str | None:
        return self._response.getheader(name)

    def read1(self, size: int) -> bytes:
        chunk = self._response.read1(size)
        if not chunk:
            left = self._response.length
            if left:
                raise http.client.IncompleteRead(b"", left)
            self._finished = True
        return chunk

    def close(self) -> None:
        self._response.close()  # its buffered reader only: the socket stays with the connection
        if self._finished and not self._response.will_close:
            self._release(self._connection)
        else:
            self._connection.close()
