"""Format identification of archived payloads (``--identify``): libmagic and PRONOM.

A resource archived without a provider (crawled, fetched from a generic OAI-PMH list or a
ResourceSync source, a repository's linked file) has no plugin output beside it; this gives
its DIDL record the same format identification a provider's ``oai_didl`` carries, from the
payload as archived: a PREMIS 3 object (:mod:`coop_common.premis`) and the two tool runs
(:mod:`coop_common.toolreport`).

The tools run in one long-lived child process (:mod:`harvester.archive.formatid.worker`),
started on first use in each process that archives, so the signatures are loaded once
instead of once a payload (fido takes 0.35 s to start). Payloads are hostile input: the
child has an address-space limit, each answer a time limit, after which the child is killed
and the next payload starts a new one; a failure is recorded as such and never stops the
harvest. A payload over ``MAX_BYTES`` is sent as its first and last halves of that size:
enough for libmagic (which reads the head) and fido (which reads the first and last 64 KiB).
"""

from __future__ import annotations

import json
import logging
import os
import resource
import select
import struct
import subprocess
import sys
import threading
import time
import zlib
from datetime import datetime
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from coop_common.analysis import Analysis
from coop_common.premis import FileFacts, premis_element
from coop_common.toolreport import analysis_element

log = logging.getLogger(__name__)

MAX_BYTES = 16 << 20
MEMORY_BYTES = 1 << 30
TIMEOUT_S = 10.0


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def fido_facts(matches: list[list[str]]) -> dict[str, str]:
    """The first match by content; failing that, the one format the extension names.

    >>> fido_facts([["fmt/11", "PNG", "1.0", "image/png", "signature"]])["puid"]
    'fmt/11'
    >>> fido_facts([["a", "", "", "", "extension"], ["b", "", "", "", "extension"]])
    {}
    """
    by_content = [m for m in matches if m[0] and m[4] not in ("extension", "fail")]
    by_name = [m for m in matches if m[0] and m[4] == "extension"]
    chosen = by_content[0] if by_content else by_name[0] if len(by_name) == 1 else None
    if chosen is None:
        return {}
    puid, name, version, mime, basis = chosen
    facts = {"puid": puid, "format_name": name, "format_version": version, "mime": mime}
    return {k: v for k, v in facts.items() if v} | {"basis": basis}


class Identifier:
    """The identification child of this process; :meth:`identify` gives its runs: libmagic's,
    and with ``pronom`` fido's."""

    def __init__(self, pronom: bool = False, timeout: float = TIMEOUT_S) -> None:
        self.pronom = pronom
        self.timeout = timeout
        self.identified = 0
        self.seconds = 0.0
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0
        self._versions: dict[str, str] = {}
        self._broken = False
        self.command = [sys.executable, "-m", "harvester.archive.formatid.worker"]
        if pronom:
            self.command.append("pronom")

    def close(self) -> None:
        with self._lock:
            self._stop()

    def identify(self, payload: bytes, url: str, sha256: str, at: datetime) -> list[Analysis]:
        """libmagic's and PRONOM's runs on ``payload``; failed runs when the child failed."""
        started = time.monotonic()
        with self._lock:
            answer, status = self._ask(payload, _name(url))
        seconds = time.monotonic() - started
        self.identified += 1
        self.seconds += seconds
        return self._runs(answer, status, sha256, int(at.timestamp()), seconds)

    # -- the child ------------------------------------------------------------------------

    def _ask(self, payload: bytes, name: str) -> tuple[dict[str, object], str]:
        if self._broken:
            return {}, "failed"
        try:
            proc = self._child()
            if proc.stdin is None or proc.stdout is None:
                raise OSError("the identification child has no pipes")
            if len(payload) > MAX_BYTES:
                half = MAX_BYTES // 2
                payload = payload[:half] + payload[-half:]
            encoded = name.encode("utf-8", "replace")
            proc.stdin.write(struct.pack(">I", len(encoded)) + encoded)
            proc.stdin.write(struct.pack(">I", len(payload)) + payload)
            proc.stdin.flush()
            line = self._line(proc)
        except (OSError, ValueError, EOFError) as exc:
            log.warning("identification failed (%s); a new child will take the next payload", exc)
            self._stop()
            return {}, "failed"
        if line is None:
            self._stop()
            return {}, "timeout"
        return json.loads(line), "ok"

    def _child(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._pid == os.getpid() and self._proc.poll() is None:
            return self._proc
        self._proc, self._pid = None, os.getpid()  # a forked process starts its own
        proc = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
            preexec_fn=_limit,
        )
        hello = self._line(proc, timeout=60.0)
        if hello is None:
            proc.kill()
            proc.wait()
            self._broken = True  # no libmagic or fido here: stop trying
            raise OSError("the identification child did not start")
        self._versions = json.loads(hello)
        self._proc = proc
        return proc

    def _line(self, proc: subprocess.Popen[bytes], timeout: float | None = None) -> bytes | None:
        if proc.stdout is None:
            raise OSError("the identification child has no output pipe")
        ready, _, _ = select.select([proc.stdout], [], [], timeout or self.timeout)
        if not ready:
            return None
        line = proc.stdout.readline()
        if not line:
            raise EOFError("the identification child ended")
        return line

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and self._pid == os.getpid():
            proc.kill()
            proc.wait()

    def _runs(
        self, answer: dict[str, object], status: str, sha256: str, ran_at: int, seconds: float
    ) -> list[Analysis]:
        mime, description = str(answer.get("mime", "")), str(answer.get("description", ""))
        found = answer.get("matches")
        matches = [list(map(str, m)) for m in found] if isinstance(found, list) else []
        magic = f"{mime}\n{description}".encode() if status == "ok" else b""
        fido = "\n".join("\t".join(m) for m in matches).encode()
        code = 0 if status == "ok" else None
        share = seconds / (2 if self.pronom else 1)
        runs = [
            Analysis(
                sha256,
                "libmagic",
                "libmagic",
                self._versions.get("magic", ""),
                ran_at,
                status,
                code,
                magic,
                share,
                {"mime": mime, "description": description} if status == "ok" else {},
            )
        ]
        if self.pronom:
            runs.append(
                Analysis(
                    sha256,
                    "pronom",
                    "fido",
                    self._versions.get("pronom", ""),
                    ran_at,
                    status,
                    code,
                    fido,
                    share,
                    fido_facts(matches) if status == "ok" else {},
                )
            )
        return runs


MODES = ("auto", "off", "magic", "pronom")
# What ``auto`` identifies with libmagic: the paths that archive without a provider's DIDL.
WITHOUT_PROVIDER = frozenset({"crawl", "resourcesync", "oai-records"})


def identifier_for(mode: str, strategy: str = "crawl") -> Identifier | None:
    """The identifier ``--identify`` asks for on ``strategy``'s captures: None (off), libmagic
    alone (``magic``; ``auto`` where no provider's DIDL comes with the files), or with PRONOM.

    >>> identifier_for("auto", "oai-get") is None, identifier_for("auto", "crawl").pronom
    (True, False)
    """
    if mode == "off" or (mode == "auto" and strategy not in WITHOUT_PROVIDER):
        return None
    return Identifier(pronom=mode == "pronom")


def _name(url: str) -> str:
    """The URL's last path segment: fido's extension fallback reads it.

    >>> _name("http://h/a/b%20c.pdf?x=1"), _name("http://h/")
    ('b c.pdf', 'payload')
    """
    return PurePosixPath(unquote(urlsplit(url).path)).name or "payload"


def payload_of(body: bytes, coding: str | None) -> bytes:
    """The archived body without its gzip or deflate content coding (up to ``MAX_BYTES``
    decoded), so that the tools see the file; as archived when it will not decode.

    >>> import gzip; payload_of(gzip.compress(b"%PDF-1.4"), "gzip"), payload_of(b"x", None)
    (b'%PDF-1.4', b'x')
    """
    coding = (coding or "identity").strip().lower()
    if coding not in ("gzip", "x-gzip", "deflate"):
        return body
    wbits = 47 if coding != "deflate" else 15  # 47: a gzip or zlib header, detected
    try:
        return zlib.decompressobj(wbits).decompress(body, MAX_BYTES)
    except zlib.error:
        return body


def statements(
    url: str, sha1: str, sha256: str, size: int, mime: str, runs: list[Analysis]
) -> list[str]:
    """The DIDL statements of an identified payload: its PREMIS 3 object, then each run, as
    :mod:`harvester.archive.didl` lays statements out."""
    facts = FileFacts(url, sha1, sha256, size, mime, "the server's Content-Type", runs)
    parts = [premis_element(facts), *(analysis_element(run) for run in runs)]
    return [f"        {part}\n" for part in parts]
