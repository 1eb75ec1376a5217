"""The child process that identifies payloads for :mod:`harvester.archive.formatid.identifier`.

Run as ``python -m harvester.archive.formatid.worker [pronom]``. It loads libmagic (through
ctypes, ``libmagic.so.1``, which Debian's ``file`` depends on) and, with ``pronom``, fido's
PRONOM signatures once,
then answers frames on its standard input: a 4-byte big-endian length and a file name (the
URL's last segment, for fido's extension fallback), a 4-byte length and the payload. Each
answer is one JSON line: libmagic's MIME type and description, fido's matches, and the
versions of both. The payload is written to a file in a private temporary folder so that
fido reads it as it reads a provider's file (its container signatures need a file).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import struct
import sys
import tempfile
from typing import Any, BinaryIO

MAGIC_MIME_TYPE = 0x10
MAGIC_NONE = 0


class Magic:
    """libmagic through ctypes: one cookie for the MIME type, one for the description."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(ctypes.util.find_library("magic") or "libmagic.so.1")
        lib.magic_open.restype = ctypes.c_void_p
        lib.magic_open.argtypes = [ctypes.c_int]
        lib.magic_load.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.magic_buffer.restype = ctypes.c_char_p
        lib.magic_buffer.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        lib.magic_version.restype = ctypes.c_int
        self._lib = lib
        self._mime = lib.magic_open(MAGIC_MIME_TYPE)
        self._text = lib.magic_open(MAGIC_NONE)
        for cookie in (self._mime, self._text):
            lib.magic_load(cookie, None)
        number = lib.magic_version()
        self.version = f"libmagic {number // 100}.{number % 100:02d}"

    def describe(self, payload: bytes) -> tuple[str, str]:
        found = []
        for cookie in (self._mime, self._text):
            value = self._lib.magic_buffer(cookie, payload, len(payload))
            found.append((value or b"").decode("utf-8", "replace"))
        return found[0], found[1]


class Pronom:
    """fido, its signatures loaded once; each identification's matches collected."""

    def __init__(self) -> None:
        from fido import __version__ as fido_version  # type: ignore[import-untyped]
        from fido.fido import CONFIG_DIR, Fido, defaults  # type: ignore[import-untyped]
        from fido.versions import get_local_versions  # type: ignore[import-untyped]

        # As fido's own command line sets them up: the signature files this install has.
        versions = get_local_versions(CONFIG_DIR)
        defaults["containersignature_file"] = versions.pronom_container_signature
        files = [versions.pronom_signature, versions.fido_extension_signature]
        self._matches: list[tuple[str, str, str, str, str]] = []
        self._fido = Fido(quiet=True, handle_matches=self._collect, format_files=files)
        self.version = f"FIDO v{fido_version} ({', '.join(files)})"

    def _collect(self, name: str, matches: Any, delta: float, matchtype: str = "") -> None:
        for fmt, _sig in matches:
            self._matches.append(
                (
                    self._fido.get_puid(fmt),
                    fmt.find("name").text or "",
                    fmt.findtext("version") or "",
                    fmt.findtext("mime") or "",
                    matchtype,
                )
            )

    def identify(self, path: str) -> list[tuple[str, str, str, str, str]]:
        self._matches = []
        self._fido.identify_file(path)
        return self._matches


def _read(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _frame(stream: BinaryIO) -> bytes:
    (size,) = struct.unpack(">I", _read(stream, 4))
    return _read(stream, size)


def _pronom(pronom: Pronom, folder: str, name: str, payload: bytes) -> list[Any]:
    path = os.path.join(folder, name.replace("\x00", "")[:200] or "payload")
    with open(path, "wb") as fh:
        fh.write(payload)
    try:
        return pronom.identify(path)
    finally:
        os.unlink(path)


def serve(stdin: BinaryIO, stdout: BinaryIO, *, with_pronom: bool = True) -> None:
    magic, pronom = Magic(), Pronom() if with_pronom else None
    versions = {"magic": magic.version, "pronom": pronom.version if pronom else ""}
    stdout.write(json.dumps(versions).encode() + b"\n")
    stdout.flush()
    with tempfile.TemporaryDirectory(prefix="identify-") as folder:
        while True:
            try:
                name = os.path.basename(_frame(stdin).decode("utf-8", "replace")) or "payload"
                payload = _frame(stdin)
            except EOFError:
                return
            mime, description = magic.describe(payload)
            matches = _pronom(pronom, folder, name, payload) if pronom else []
            answer = {"mime": mime, "description": description, "matches": matches}
            stdout.write(json.dumps(answer).encode() + b"\n")
            stdout.flush()


if __name__ == "__main__":  # pragma: no cover - the child's entry point
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - fido writes notes to stderr
    serve(sys.stdin.buffer, sys.stdout.buffer, with_pronom="pronom" in sys.argv[1:])
