"""Metadata formats and their registry.

A format is one module holding one object that satisfies :class:`MetadataFormat`. Adding a
format (say, one that runs ``file`` or exiftool over the resource, as mod_oai's plug-ins did)
means writing such a module and registering its object; the protocol code never changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from server_module.index.publicpaths import DEFAULT_EXCLUDES
from server_module.records import FileRecord

# Files up to this size go into oai_didl by value. From about 64 KiB a file costs both sides
# as little or less by reference: carried, it is a third larger (base64), rendered, parsed and
# decoded in the list's one chain of pages; by reference, it is a sendfile here and a GET the
# harvester spreads over its processes. Sites of one file size, carried against by reference:
# 0.83x the time at 16 KiB, 0.90x at 32 KiB, 0.98-1.14x at 64 KiB, 1.06x at 128 KiB
# (bench/README.md, ``### Issue 15, session 13``).
INLINE_MAX = 64 * 1024

XSI = "http://www.w3.org/2001/XMLSchema-instance"


@dataclass(frozen=True)
class FormatContext:
    """What a format may need besides the record: where files live and its own limits."""

    docroot: Path
    schema_base: str  # URL under which the provider serves the schemas this project authors
    inline_max: int = INLINE_MAX
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES  # the public-path rules files are opened by
    allow_outside: tuple[Path, ...] = ()


class MetadataFormat(Protocol):
    """One metadata format: its OAI-PMH description and how a record is rendered."""

    prefix: str
    namespace: str
    schema: str  # the URL of the XML schema that validates it; a relative one: see schema_url

    def render(self, record: FileRecord, ctx: FormatContext) -> str:
        """The record's metadata as one XML element (a string), namespaces declared on it."""
        ...

    def weight(self, record: FileRecord, ctx: FormatContext) -> int:
        """About how many bytes :meth:`render` produces, to fill pages by size."""
        ...


def schema_url(fmt: MetadataFormat, ctx: FormatContext) -> str:
    """``fmt``'s schema as a URL: one of this project's own is relative, under the provider's
    schema base.

    >>> ctx = FormatContext(Path("/"), "http://h/oai/schemas")
    >>> class F:
    ...     schema = "http_header.xsd"
    >>> schema_url(F(), ctx)
    'http://h/oai/schemas/http_header.xsd'
    """
    if "://" in fmt.schema:
        return fmt.schema
    return f"{ctx.schema_base.rstrip('/')}/{fmt.schema}"  # per record: no urljoin


class FormatRegistry:
    """The formats a provider disseminates, by metadataPrefix, in registration order."""

    def __init__(self, formats: Iterable[MetadataFormat] = ()) -> None:
        self._formats: dict[str, MetadataFormat] = {}
        for fmt in formats:
            self.register(fmt)

    def register(self, fmt: MetadataFormat) -> None:
        if fmt.prefix in self._formats:
            raise ValueError(f"metadataPrefix {fmt.prefix!r} is registered already")
        self._formats[fmt.prefix] = fmt

    def get(self, prefix: str) -> MetadataFormat | None:
        return self._formats.get(prefix)

    def __iter__(self) -> Iterator[MetadataFormat]:
        return iter(self._formats.values())

    def prefixes(self) -> frozenset[str]:
        return frozenset(self._formats)


def default_registry() -> FormatRegistry:
    """``oai_dc`` (required by the protocol), ``http_header``, ``oai_didl`` and ``premis``."""
    from server_module.formats.http_header import HTTP_HEADER
    from server_module.formats.oai_dc import OAI_DC
    from server_module.formats.oai_didl import OAI_DIDL
    from server_module.formats.premis import PREMIS

    return FormatRegistry([OAI_DC, HTTP_HEADER, OAI_DIDL, PREMIS])
