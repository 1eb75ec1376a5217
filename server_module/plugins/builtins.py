"""The built-in plugins, each on where its tool is installed (``builtin_plugins`` picks them).

========== ======================================= ===================== =====
label      tool and arguments                      files                 batch
========== ======================================= ===================== =====
libmagic   ``file --brief --mime-type``, ``file    every file            200
           --brief`` (MIME type and description)
pronom     fido (``opf-fido``): the PRONOM PUID,   every file            200
           format name and version
exiftool   ``exiftool -X --System:all``: embedded  images, audio, video, 50
           metadata as RDF/XML                     PDF
pdfinfo    ``pdfinfo -isodates``                   PDF                   1
mediainfo  ``mediainfo --Output=XML``              audio, video          1
========== ======================================= ===================== =====

Tools that accept many paths take a batch of files a run (a process start costs more than
identifying a small file: fido takes 0.35 s to start and about 8 ms a file); a batch that
does not end well is run again one file at a time, so each file gets its own status. The
file-system group of ExifTool's tags (name, folder, dates, permissions) is left out: it
describes the provider's disk, not the file.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

from server_module.plugins import child
from server_module.plugins.spec import PATH, FactReader, Plugin, Splitter, no_facts, one_file

log = logging.getLogger(__name__)

_FIDO = (sys.executable, "-m", "fido.fido")
_FIDO_MATCH = (
    "%(info.count)s\t%(info.puid)s\t%(info.formatname)s\t%(info.version)s\t"
    "%(info.mimetype)s\t%(info.matchtype)s\n"
)
_FIDO_NO_MATCH = "%(info.count)s\t\t\t\t\t%(info.matchtype)s\n"
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_SAFE = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


def lines(output: bytes, count: int) -> list[bytes | None]:
    """One line a file, in order (``file --brief`` with many paths)."""
    found = output.rstrip(b"\n").split(b"\n") if output else []
    return list(found) if len(found) == count else [None] * count


def fido_lines(output: bytes, count: int) -> list[bytes | None]:
    """fido's lines, each led by the file's number in the run (1, 2, ...): a file fido
    could match several ways has several lines."""
    parts: list[list[bytes]] = [[] for _ in range(count)]
    for line in output.splitlines():
        number, _, rest = line.partition(b"\t")
        if not number.isdigit() or not 1 <= int(number) <= count:
            return [None] * count
        parts[int(number) - 1].append(rest)
    return [b"\n".join(p) if p else None for p in parts]


def rdf_descriptions(output: bytes, count: int) -> list[bytes | None]:
    """ExifTool's ``-X`` output of many files: one ``rdf:RDF`` a file, its path left out."""
    try:
        root = etree.fromstring(output, _SAFE)
    except etree.XMLSyntaxError:
        return [None] * count
    found = root.findall(f"{{{_RDF}}}Description")
    if len(found) != count:
        return [None] * count
    out: list[bytes | None] = []
    for description in found:
        description.attrib.pop(f"{{{_RDF}}}about", None)
        wrapper = etree.Element(f"{{{_RDF}}}RDF", nsmap={"rdf": _RDF})
        wrapper.append(description)
        out.append(etree.tostring(wrapper, encoding="UTF-8"))
    return out


def magic_facts(output: bytes) -> dict[str, str]:
    mime, _, description = output.decode("utf-8", "replace").partition("\n")
    return {"mime": mime.strip(), "description": description.strip()}


def fido_facts(output: bytes) -> dict[str, str]:
    """The first match by content (signature or container); failing that, the one format
    the extension names (several: none, since the bytes did not tell them apart). ``basis``
    says which."""
    matches = [
        (line.split("\t") + [""] * 5)[:5]
        for line in output.decode("utf-8", "replace").splitlines()
        if line.strip()
    ]
    by_content = [m for m in matches if m[0] and m[4] not in ("extension", "fail")]
    by_name = [m for m in matches if m[0] and m[4] == "extension"]
    if by_content:
        chosen = by_content[0]
    elif len(by_name) == 1:
        chosen = by_name[0]
    else:
        return {}
    puid, name, version, mime, basis = chosen
    facts = {"puid": puid, "format_name": name, "format_version": version, "mime": mime}
    return {k: v for k, v in facts.items() if v and v != "None"} | {"basis": basis}


@dataclass(frozen=True)
class Builtin:
    """A built-in's definition, before its tool is found and its version read."""

    label: str
    tool: str
    argvs: tuple[tuple[str, ...], ...]
    version: tuple[str, ...]
    mime: tuple[str, ...]
    batch: int = 1
    split: tuple[Splitter, ...] = (one_file,)
    facts: FactReader = no_facts
    installed: Callable[[], bool] | None = None


_MEDIA = ("image/*", "audio/*", "video/*", "application/pdf")

BUILTINS: dict[str, Builtin] = {
    b.label: b
    for b in (
        Builtin(
            "libmagic",
            "file",
            (("file", "--brief", "--mime-type", "--", PATH), ("file", "--brief", "--", PATH)),
            ("file", "--version"),
            ("*",),
            batch=200,
            split=(lines, lines),
            facts=magic_facts,
        ),
        Builtin(
            "pronom",
            "fido",
            (
                (
                    *_FIDO,
                    "-q",
                    "-matchprintf",
                    _FIDO_MATCH,
                    "-nomatchprintf",
                    _FIDO_NO_MATCH,
                    PATH,
                ),
            ),
            (*_FIDO, "-v"),
            ("*",),
            batch=200,
            split=(fido_lines,),
            facts=fido_facts,
            installed=lambda: importlib.util.find_spec("fido") is not None,
        ),
        Builtin(
            "exiftool",
            "exiftool",
            (("exiftool", "-X", "-q", "-q", "--System:all", "--", PATH),),
            ("exiftool", "-ver"),
            _MEDIA,
            batch=50,
            split=(rdf_descriptions,),
        ),
        Builtin(
            "pdfinfo",
            "pdfinfo",
            (("pdfinfo", "-isodates", PATH),),
            ("pdfinfo", "-v"),
            ("application/pdf",),
        ),
        Builtin(
            "mediainfo",
            "mediainfo",
            (("mediainfo", "--Output=XML", PATH),),
            ("mediainfo", "--Version"),
            ("audio/*", "video/*"),
        ),
    )
}
BUILTIN_NAMES = tuple(BUILTINS)


def is_installed(builtin: Builtin) -> bool:
    if builtin.installed is not None:
        return builtin.installed()
    return shutil.which(builtin.argvs[0][0]) is not None


def tool_version(argv: tuple[str, ...], limits: child.Limits) -> str:
    """The first line the version command prints that holds a digit; "" when none. Asked
    once a process: every provider worker builds its plugins, and fido takes 0.35 s to say."""
    return _version(argv, limits.memory_bytes) if argv else ""


@functools.lru_cache(maxsize=64)
def _version(argv: tuple[str, ...], memory_bytes: int) -> str:
    outcome = child.run(argv, child.Limits(10.0, memory_bytes, 64 * 1024))
    for line in (outcome.stdout + b"\n" + outcome.stderr).decode("utf-8", "replace").splitlines():
        if any(c.isdigit() for c in line):
            return line.strip()[:200]
    return ""


def resolve(builtin: Builtin, timeout: float, limits: child.Limits) -> Plugin | None:
    """The built-in as a :class:`Plugin`, or None (logged) when its tool is not installed."""
    if not is_installed(builtin):
        log.info("plugin %s: %s is not installed; not run", builtin.label, builtin.tool)
        return None
    return Plugin(
        builtin.label,
        builtin.tool,
        tool_version(builtin.version, limits),
        builtin.argvs,
        builtin.mime,
        timeout,
        builtin.batch,
        builtin.split,
        builtin.facts,
    )
