"""Run a command as a child of this small process and write what ``wait4`` says of it.

``python -S bench/childusage.py REPORT.json -- COMMAND ARGS...``

Linux keeps a process's peak RSS across ``exec``: a command started by a large Python process
(a benchmark holding a site's manifest) reports at least that process's RSS as its own. This
script is started the same way, so its own peak is inflated too, but the command it forks from
its small self starts afresh: its ``ru_maxrss`` and CPU seconds, read by ``wait4`` here, are the
command's own, but for a floor of about 6 MB: this small process's RSS, which the fork copies
before the ``exec``. Run with ``-S`` and the standard library's core only, so it costs a few
milliseconds. The exit status is the command's (128 + N when a signal N ended it).
"""

import json
import os
import sys
import time


def main(argv: list[str]) -> int:
    report, separator, command = argv[0], argv[1], argv[2:]
    if separator != "--" or not command:
        print("usage: childusage.py REPORT.json -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    _pid, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - started
    fields = {name: getattr(usage, name) for name in dir(usage) if name.startswith("ru_")}
    with open(report, "w", encoding="ascii") as fh:
        json.dump({"seconds": seconds, "usage": fields}, fh)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
