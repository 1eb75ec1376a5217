"""The seam under :class:`harvester.oai.httpclient.Http`: one GET sent, its response's head read.

A :class:`Transport` sends one request (no redirect followed, no body read) and hands back a
:class:`Response` whose body is read by ``read1`` chunks, so that
:class:`~harvester.oai.httpclient.Http`
can bound it in size and time whatever sent it. A transport raises
:class:`~harvester.exceptions.TransientFetchError` when the server cannot be reached or breaks
the exchange before its head, and :class:`~harvester.exceptions.PermanentFetchError` for a
TLS failure or a request that cannot be made. Two transports satisfy it:
:class:`SessionTransport` here (a ``requests`` session: proxies, ``.netrc``, everything
requests reads from the environment) and the keep-alive ``http.client`` one of
:mod:`harvester.oai.connectiontransport`, which falls back to a session where the environment asks
for
what only requests does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests

from harvester.exceptions import PermanentFetchError, TransientFetchError
from harvester.http.exchange import Header


class Response(Protocol):
    """A response's head as received, its body still to read.

    ``url`` is the URL the request went to, ``version`` http.client's 10 or 11, ``headers``
    the response's fields in the order received and ``request_headers`` the request's as
    sent on the wire, Host included."""

    url: str
    status: int
    reason: str
    version: int
    headers: tuple[Header, ...]
    request_headers: tuple[Header, ...]
    peer_ip: str | None  # the server's address, when the transport can tell

    def header(self, name: str) -> str | None:
        """The field's value (several joined by ``, ``), None if absent."""

    def read1(self, size: int) -> bytes:
        """Up to ``size`` body bytes of what has arrived, transfer coding removed and content
        coding kept; b"" at the end. Raises OSError or http.client.HTTPException (or
        urllib3's HTTPError) when the body breaks off."""

    def close(self) -> None:
        """Releases the connection (for another request when the body was read to its end)."""


def peer_address(sock: object) -> str | None:
    """The IP address ``sock`` is connected to (through a proxy: the proxy's), None if it
    cannot say: the WARC-IP-Address of the records of an exchange on it."""
    try:
        peer = sock.getpeername() if sock is not None else None  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return None
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


class Transport(Protocol):
    def send(
        self, url: str, params: Mapping[str, str] | None, headers: Mapping[str, str], timeout: float
    ) -> Response:
        """``GET url?params`` with ``headers``; ``timeout`` bounds the connect and each read."""

    def close(self) -> None:
        """Closes every connection it keeps."""


class SessionTransport:
    """A :class:`Transport` on a ``requests`` session; :meth:`close` closes the session."""

    def __init__(self, session: requests.Session) -> None:
        self.session = session

    def send(
        self, url: str, params: Mapping[str, str] | None, headers: Mapping[str, str], timeout: float
    ) -> Response:
        try:
            response = self.session.get(
                url,
                params=params,
                headers=headers,
                timeout=(timeout, timeout),
                stream=True,
                allow_redirects=False,
            )
        except requests.exceptions.SSLError as exc:
            raise PermanentFetchError(f"TLS failure for {url}: {exc}") from exc
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise TransientFetchError(f"cannot reach {url}: {exc}") from exc
        except requests.RequestException as exc:
            raise PermanentFetchError(f"cannot request {url}: {exc}") from exc
        return _SessionResponse(response)

    def close(self) -> None:
        self.session.close()


class _SessionResponse:
    def __init__(self, response: requests.Response) -> None:
        self._response = response
        self.url = response.url
        self.status = response.status_code
        self.reason = response.reason or ""
        self.version = response.raw.version
        self.headers = tuple(response.raw.headers.items())
        self.request_headers = _request_headers(response)
        connection = getattr(response.raw, "connection", None)  # urllib3's, while streaming
        self.peer_ip = peer_address(getattr(connection, "sock", None))

    def header(self, name: str) -> str | None:
        value = self._response.headers.get(name)
        return None if value is None else str(value)

    def read1(self, size: int) -> bytes:
        return bytes(self._response.raw.read1(size, decode_content=False))

    def close(self) -> None:
        self._response.close()


def _request_headers(response: requests.Response) -> tuple[Header, ...]:
    sent = [
        (name, value.decode("latin-1") if isinstance(value, bytes) else value)
        for name, value in response.request.headers.items()
    ]
    if not any(k.lower() == "host" for k, _ in sent):  # http.client adds Host on the wire
        sent.insert(0, ("Host", urlsplit(response.url).netloc.rpartition("@")[2]))
    return tuple(sent)


class EnvironmentSession(requests.Session):
    """A session reading the environment (proxies, ``REQUESTS_CA_BUNDLE``) once per origin:
    requests reads ``os.environ`` again for every request, about a third of the CPU it
    spends on a list page's request. The environment is taken not to change during a run."""

    def __init__(self) -> None:
        super().__init__()
        self._merged: dict[tuple[object, ...], dict[str, Any]] = {}

    def merge_environment_settings(
        self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any
    ) -> dict[str, Any]:
        if proxies:  # per-request proxies: as requests does
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        key = (*urlsplit(str(url))[:2], stream, verify, cert)
        if key not in self._merged:
            self._merged[key] = super().merge_environment_settings(url, {}, stream, verify, cert)
        return dict(self._merged[key])
