"""The provider: an OAI-PMH 2.0 repository over the files of a website (after mod_oai).

``create_app(docroot=..., base_url=...)`` returns the WSGI application.
"""

from __future__ import annotations

from coop_common import __version__
from server_module.app import create_app

__all__ = ["__version__", "create_app"]
