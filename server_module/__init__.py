"""The provider: an OAI-PMH 2.0 repository over the files of a website (after mod_oai)."""

from __future__ import annotations

from harvester import __version__

__all__ = ["__version__"]
