"""The provider's own errors: failures of the provider itself, not of a harvester's request.

The protocol's error conditions (§3.6) are a separate tree in :mod:`server_module.oai.errors`:
those are answers, rendered into a response document. The errors here are never sent to a
harvester; they stop the provider from starting or from refreshing, and an operator acts on
them::

    IndexSchemaError      the index file was written by an incompatible version: move it
                          aside (or delete it) and let the provider build a new one
    StartupError          the provider cannot start as configured; the message names the
                          path or value and the flag that fixes it (``exit_code``: 2)
      IndexBusy           another process holds the index (``exit_code``: 1); the message
                          names its pid
      BaseURLChange       the base URL is not the index's: ``--rebase`` renames every item
"""

from __future__ import annotations

__all__ = ["BaseURLChange", "IndexBusy", "IndexSchemaError", "StartupError"]


class IndexSchemaError(RuntimeError):
    """The index file has a schema version other than :mod:`server_module.index.schema`'s."""


class StartupError(RuntimeError):
    """The provider cannot start as configured (a usage error: a flag fixes it)."""

    exit_code = 2


class IndexBusy(StartupError):
    """Another provider, or ``oai-provider index``, holds the index."""

    exit_code = 1


class BaseURLChange(StartupError):
    """The base URL differs from the one the index's identifiers were built from."""
