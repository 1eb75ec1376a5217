"""The item model: one public file of the site is one OAI-PMH item."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from coop_common.analysis import Analysis


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What the provider index knows of one file version (or of its deletion).

    ``identifier`` is the file's public URL: the base URL plus the percent-encoded relative
    path, so it is pure ASCII even for names whose bytes are not UTF-8. ``datestamp`` is the
    UTC second at which the provider observed this version (or the deletion), never the mtime.
    """

    identifier: str
    relpath: bytes
    datestamp: int
    deleted: bool
    size: int
    mtime_ns: int
    mime: str
    sha1: str
    sha256: str
    title: str | None
    analyses: tuple[Analysis, ...] = ()  # the plugins' results for this version

    @property
    def set_specs(self) -> tuple[str, str]:
        """The MIME hierarchy as OAI sets, as mod_oai did: ``text`` and ``text:html``."""
        return set_specs_for(self.mime)


def set_specs_for(mime: str) -> tuple[str, str]:
    """The setSpecs of a MIME type. ``+`` may not appear in a setSpec (OAI-PMH.xsd), so it is
    written ``~``, which no registered MIME type uses; :func:`mime_for_set_spec` undoes it.

    >>> set_specs_for("text/html")
    ('text', 'text:html')
    >>> set_specs_for("image/svg+xml")
    ('image', 'image:svg~xml')
    """
    major, _, minor = mime.partition("/")
    return major, f"{major}:{minor.replace('+', '~')}"


def mime_for_set_spec(spec: str) -> tuple[str, str | None]:
    """The MIME major type and, for a two-level setSpec, the full MIME type it names.

    >>> mime_for_set_spec("image:svg~xml"), mime_for_set_spec("text")
    (('image', 'image/svg+xml'), ('text', None))
    """
    major, sep, minor = spec.partition(":")
    return major, f"{major}/{minor.replace('~', '+')}" if sep else None


def make_identifier(base_url: str, relpath: bytes) -> str:
    """The item's public URL: pure ASCII, every byte outside the unreserved set escaped.

    >>> make_identifier("http://h/site/", b"docs/caf\\xe9 1%.txt")
    'http://h/site/docs/caf%E9%201%25.txt'
    """
    return f"{base_url.rstrip('/')}/{quote(relpath, safe='/')}"
