"""``python -m harvester.cli``."""

import sys

from harvester.cli import main

if __name__ == "__main__":
    sys.exit(main())
