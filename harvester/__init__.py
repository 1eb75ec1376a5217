"""The harvesting client: archives a website into WARC files with MPEG-21 DIDL records.

It learns a site's complete URL list from the site's OAI-PMH provider and, run again,
fetches only what changed.
"""

from __future__ import annotations

from coop_common import __version__

__all__ = ["__version__"]
