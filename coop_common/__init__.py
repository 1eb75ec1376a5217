"""What the provider and the harvester share, and nothing else: the version, the layered
settings loader, the command-line runner, durable file operations, XML text, and the PREMIS 3
object and tool-run elements both put in their DIDL records.

Both ``server_module`` and ``harvester`` import from here; this package imports neither, so a
website owner's provider never loads the harvester.
"""

from __future__ import annotations

# The one place the version is written: pyproject.toml reads it from here. Reading the
# installed metadata instead (importlib.metadata) cost every process 50-100 ms at start.
__version__ = "0.1.0"

__all__ = ["__version__"]
