"""The heap tuning behind one gzip compressor per WARC record (``harvester.archive.heap``)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

from harvester.archive.heap import keep_freed_heap

# In a fresh process: minor page faults while making gzip members of small records, before
# and after keep_freed_heap(). A fault means memory came back from the system.
FAULTS = """
import json, resource, zlib
from harvester.archive.heap import keep_freed_heap

def faults(members):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for n in range(members):
        member = zlib.compressobj(6, zlib.DEFLATED, 31)
        member.compress(b"WARC/1.1 record %d " % n * 60)
        member.flush()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

faults(10)  # warm up the interpreter's own allocations
print(json.dumps({"before": faults(300), "applied": keep_freed_heap(), "after": faults(300)}))
"""


def test_compressors_stop_faulting_their_memory_back_in() -> None:
    run = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, timeout=60)
    got = json.loads(run.stdout)
    if platform.libc_ver()[0] != "glibc":  # the threshold is glibc's: elsewhere, nothing done
        assert got["applied"] is False
        return
    assert got["applied"] is True
    assert got["before"] >= 300 * 8, f"expected the default heap to refault: {got}"
    assert got["after"] <= 300, f"compressors still fault their memory back in: {got}"


def test_applied_once_per_process() -> None:
    first = keep_freed_heap()
    assert keep_freed_heap() is first
