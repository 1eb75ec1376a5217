"""The ``harvester`` command: parse flags, build components, call them; ``watch`` and
``demo`` wired in modules of their own. ``main`` is re-exported here, so that
``harvester.cli:main`` and ``python -m harvester.cli`` stay the command.

May import: every package of the harvester, and the provider's index for the demo;
nothing imports it."""

from harvester.cli.commands import main

__all__ = ["main"]
