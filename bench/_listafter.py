"""``python bench/_listafter.py harvest ...``: the harvester CLI with the list never followed
(:mod:`harvester.listed.follower` off): every file is fetched after the list, as before it."""

from __future__ import annotations

import sys

import harvester.run.harvest
from harvester.cli import main

if __name__ == "__main__":
    harvester.run.harvest.follows = lambda settings: False  # type: ignore[assignment]
    sys.exit(main(sys.argv[1:]))
