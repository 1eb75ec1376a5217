"""What the provider and the harvester share, and nothing else: the version, the layered
settings loader, the command-line runner, durable file operations and XML text.

Both ``server_module`` and ``harvester`` import from here; this package imports neither, so a
website owner's provider never loads the harvester.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("coop-archive")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
