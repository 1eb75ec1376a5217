"""The real provider behind a watching middleware: for harvest tests that must see what the
harvester asked and change the site at one exact moment of a harvest.

``watched(log=..., **create_app_kwargs)`` logs every request as one JSON line in ``log``
(path, query arguments, the conditional headers, the status answered). Options:

* ``change_on_set``: ``[set_spec, relpath]``: at the first request that starts the list of
  ``set_spec``, append to the file, refresh the index, then wait ``settle`` seconds before
  answering, so the change is datestamped well before that list's responseDate;
* ``break_set``: the first resumption request of ``break_set``'s list gets half a page;
* ``missing``: ``[relpath, n]`` or ``[relpath, n, status]``: the first ``n`` GETs of the file
  answer 404 (or ``status``, a 4xx code).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

from server_module.index.fileindex import FileIndex
from tests.apps import analysed_provider
from tests.faulty_provider import start_response_ignored

StartResponse = Callable[..., Any]
Environ = dict[str, Any]


def watched(
    log: str,
    change_on_set: list[str] | None = None,
    settle: float = 2.2,
    break_set: str | None = None,
    missing: list[Any] | None = None,
    **kwargs: Any,
) -> Callable[[Environ, StartResponse], Iterable[bytes]]:
    app = analysed_provider(**kwargs)
    lock = threading.Lock()
    seen = {"changed": False, "broken": False, "missing": 0, "set": None}

    def change(environ: Environ, relpath: str) -> None:
        path = Path(kwargs["docroot"]) / relpath
        path.write_bytes(path.read_bytes() + b"\n<!-- changed between two sets' lists -->\n")
        base = f"http://{environ['HTTP_HOST']}"
        with FileIndex(Path(kwargs["index_path"]), Path(kwargs["docroot"]), base) as idx:
            idx.refresh()
        time.sleep(settle)

    def wrapped(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        args = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        path = unquote(environ.get("PATH_INFO", ""))
        status: list[str] = []

        def recording(code: str, headers: list[tuple[str, str]], exc: Any = None) -> Any:
            status.append(code.split()[0])
            return start_response(code, headers, exc)

        with lock:
            if "set" in args:
                seen["set"] = args["set"]
            if change_on_set and args.get("set") == change_on_set[0] and not seen["changed"]:
                seen["changed"] = True
                change(environ, change_on_set[1])
            broken = (
                break_set is not None
                and "resumptionToken" in args
                and seen["set"] == break_set
                and not seen["broken"]
            )
            seen["broken"] = seen["broken"] or broken
            gone = bool(missing) and path == "/" + missing[0] and seen["missing"] < missing[1]
            seen["missing"] += gone
        if gone:
            code = f"{missing[2]} Refused" if len(missing) > 2 else "404 Not Found"
            body: Iterable[bytes] = _send(start_response, code, b"not found\n")
            status.append(code.split()[0])
        elif broken:
            whole = b"".join(app(environ, start_response_ignored))
            body = _send(start_response, "200 OK", whole[: len(whole) // 2])
            status.append("200")
        else:
            served = app(environ, recording)
            body = list(served)
            getattr(served, "close", lambda: None)()
        _log(log, environ, path, args, status[0] if status else "")
        return body

    return wrapped


def _log(log: str, environ: Environ, path: str, args: dict[str, str], status: str) -> None:
    entry = {
        "path": path,
        "args": args,
        "if_modified_since": environ.get("HTTP_IF_MODIFIED_SINCE"),
        "if_none_match": environ.get("HTTP_IF_NONE_MATCH"),
        "status": status,
    }
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def read_log(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _send(start_response: StartResponse, status: str, body: bytes) -> list[bytes]:
    start_response(status, [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
    return [body]
