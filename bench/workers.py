"""The gunicorn workers of a server under benchmark, read from ``/proc``: their peak memory
and the CPU time they have used."""

from __future__ import annotations

import os
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def worker_pids(master: int) -> list[int]:
    """The gunicorn master's children, its workers (none if it has not forked them yet)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                pids.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue  # a process that ended while we looked
    return pids


def worker_peak_rss_mb(master: int) -> float:
    """The largest VmHWM among the gunicorn master's workers, in MiB."""
    peaks = []
    for pid in worker_pids(master):
        try:
            peaks.append(vm_hwm_kib(pid))
        except (OSError, ValueError):
            continue
    if not peaks:
        raise RuntimeError(f"no worker process under gunicorn master {master}")
    return max(peaks) / 1024


def workers_cpu_s(master: int) -> float:
    """The user and system CPU seconds the master's workers have used so far."""
    total = 0
    for pid in worker_pids(master):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime and stime (fields 14 and 15)
    return total / TICKS_PER_S


def vm_hwm_kib(pid: int) -> int:
    """A process's peak resident set (VmHWM), in KiB."""
    status = Path(f"/proc/{pid}/status")
    for line in status.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise ValueError(f"no VmHWM in {status}")
