"""The harvesting client: archives a website into WARC files with MPEG-21 DIDL records.

It learns a site's complete URL list from the site's OAI-PMH provider and, run again,
fetches only what changed.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("coop-archive")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
