"""The provider's own errors: failures of the provider itself, not of a harvester's request.

The protocol's error conditions (§3.6) are a separate tree in :mod:`server_module.oai.errors`:
those are answers, rendered into a response document. The errors here are never sent to a
harvester; they stop the provider from starting or from refreshing, and an operator acts on
them::

    IndexSchemaError      the index file was written by an incompatible version: move it
                          aside (or delete it) and let the provider build a new one
"""

from __future__ import annotations

__all__ = ["IndexSchemaError"]


class IndexSchemaError(RuntimeError):
    """The index file has a schema version other than :mod:`server_module.indexschema`'s."""
