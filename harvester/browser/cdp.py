"""The DevTools connection: CDP commands and events over the browser's websocket.

One connection serves the whole browser; each tab is a flat session (``sessionId`` on every
message), so its events go to the handler registered for that session. A command waits for
its answer at most ``timeout`` seconds; the connection's end fails every command waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

log = logging.getLogger(__name__)

Event = Callable[[str, dict[str, Any]], None]
MAX_MESSAGE = 512 * 1024 * 1024  # a body comes back base64-encoded in one message


class CDPError(Exception):
    """A command failed, timed out, or the browser went away."""


class Connection:
    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[str, Event] = {}
        self._closed: str | None = None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def open(cls, url: str) -> Connection:
        ws = await connect(url, max_size=MAX_MESSAGE, ping_interval=None, compression=None)
        return cls(ws)

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def on(self, session: str, handler: Event | None) -> None:
        """Events of ``session`` ("" for the browser's own) go to ``handler``."""
        if handler is None:
            self._handlers.pop(session, None)
        else:
            self._handlers[session] = handler

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str = "",
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        if self._closed is not None:
            raise CDPError(self._closed)
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            await self._ws.send(json.dumps(message))
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise CDPError(f"{method}: no answer in {timeout:g} s") from None
        except Exception as exc:
            if isinstance(exc, CDPError):
                raise
            raise CDPError(f"{method}: {exc}") from exc
        finally:
            self._waiting.pop(ident, None)

    async def close(self) -> None:
        self._end("the connection to the browser was closed")
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                self._dispatch(json.loads(raw))
        except Exception as exc:  # the socket's end: every waiting command fails
            log.debug("DevTools connection ended: %s", exc)
        self._end("the browser closed its DevTools connection")

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            future = self._waiting.get(message["id"])
            if future is None or future.done():
                return
            if "error" in message:
                error = message["error"]
                future.set_exception(CDPError(str(error.get("message", error))))
            else:
                future.set_result(message.get("result", {}))
            return
        handler = self._handlers.get(message.get("sessionId", ""))
        if handler is not None:
            try:
                handler(message.get("method", ""), message.get("params", {}))
            except Exception:  # a handler's defect must not end the connection
                log.exception("handling %s", message.get("method"))

    def _end(self, why: str) -> None:
        if self._closed is None:
            self._closed = why
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(CDPError(why))
        for handler in list(self._handlers.values()):
            with contextlib.suppress(Exception):
                handler("Connection.closed", {})
