"""The project's commands run as a user runs them: the console scripts the package installs
next to this interpreter, in a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HARVESTER = str(Path(sys.executable).with_name("harvester"))


def harvester(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``harvester ARGV``, its output captured as text, whatever its exit code."""
    return subprocess.run(
        [HARVESTER, *argv], capture_output=True, text=True, timeout=timeout, check=False
    )
