"""The shared site generator for tests and benchmarks (``make_site``); it lives in the package
as :mod:`harvester.samplesite` so that ``harvester demo`` can use it too."""

from __future__ import annotations

from harvester.samplesite import (
    AWKWARD_NAMES,
    MINIMAL_PNG,
    NON_UTF8_NAME,
    Manifest,
    files_on_disk,
    href,
    make_site,
)

__all__ = [
    "AWKWARD_NAMES",
    "MINIMAL_PNG",
    "NON_UTF8_NAME",
    "Manifest",
    "files_on_disk",
    "href",
    "make_site",
]
