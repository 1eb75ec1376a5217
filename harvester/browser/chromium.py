"""The browser process: Debian's ``chromium``, headless, with a profile of its own.

Started with a profile in a temporary folder named by the harvester's pid (a killed
harvester's is removed by the next one), with ``--remote-debugging-port=0`` (the port it picks
is read from the line it writes on stderr), in a process group of its own (killed as a group),
and made to die with the harvester (``PR_SET_PDEATHSIG``), so a SIGKILLed crawl leaves no
browser behind. Its memory is the proportional set size of every process in its group
(:meth:`Chromium.rss`).

Its renderer processes are held to half its tabs, at least 2 (:func:`renderer_flags`):
Chromium otherwise starts one a tab and more (a spare one, one per navigation away from
``about:blank``), each 70-130 MB resident; with 4 tabs that made the browser's processes
1.6 GB resident together, 1.0 GB with 2 renderers, at the same pages/s and completeness
(``bench browser --tabs 4``). Tabs of one site then share a renderer; sites kept apart by
site isolation still get their own, as the limit is a soft one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)
LISTENING = re.compile(rb"DevTools listening on (ws://\S+)")
PROFILE = "harvester-chromium-"  # a profile's folder: this, the harvester's pid, a suffix
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
FLAGS = (
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
    "--window-size=1280,800",
)


def renderer_flags(tabs: int) -> tuple[str, ...]:
    """The flags that hold a browser of ``tabs`` tabs to half as many renderers, at least 2.

    >>> renderer_flags(1), renderer_flags(4), renderer_flags(8)[0]
    (('--renderer-process-limit=2',), ('--renderer-process-limit=2',), '--renderer-process-limit=4')
    """
    return (f"--renderer-process-limit={max(2, (tabs + 1) // 2)}",)


class BrowserMissing(RuntimeError):
    """No Chromium where the settings say."""


class Chromium:
    def __init__(self, executable: str, extra: tuple[str, ...] = ()) -> None:
        self.executable, self.extra = executable, extra  # more flags (the bench's proxy)
        self.process: asyncio.subprocess.Process | None = None
        self.devtools_url = ""
        self._profile: Path | None = None
        self._drain: asyncio.Task[None] | None = None

    async def start(self, timeout: float = 60.0) -> str:
        """The browser started; its DevTools websocket URL."""
        path = shutil.which(self.executable)
        if path is None:
            raise BrowserMissing(f"no browser at {self.executable!r} (make sysdeps installs it)")
        _remove_stale_profiles()
        self._profile = Path(tempfile.mkdtemp(prefix=f"{PROFILE}{os.getpid()}-"))
        flags = [*FLAGS, *self.extra, f"--user-data-dir={self._profile}"]
        flags.append("--remote-debugging-port=0")
        if os.geteuid() == 0:  # Chromium refuses to run as root with its sandbox
            flags.append("--no-sandbox")
        self.process = await asyncio.create_subprocess_exec(
            path,
            *flags,
            "about:blank",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            self.devtools_url = await asyncio.wait_for(self._listening(), timeout)
        except (TimeoutError, EOFError):
            await self.close()
            raise BrowserMissing(f"{path} did not start its DevTools server") from None
        self._drain = asyncio.get_running_loop().create_task(self._drained())
        return self.devtools_url

    def rss(self) -> int:
        """Bytes resident in the browser's processes (its process group), each shared page
        counted once (the sum of their proportional set sizes)."""
        if self.process is None:
            return 0
        group, total = self.process.pid, 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                if int(fields[2]) == group:  # the process group, field 5 of stat
                    total += _proportional(entry)
            except (OSError, ValueError, IndexError):
                continue
        return total

    async def close(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(TimeoutError):  # asked to close: it reaps its children
                await asyncio.wait_for(process.wait(), 5)
            with contextlib.suppress(ProcessLookupError):  # and whatever is left of it
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 30)
        if self._drain is not None:
            self._drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain
            self._drain = None
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    def _stderr(self) -> asyncio.StreamReader:
        """The browser's stderr, a pipe since it started."""
        if self.process is None or self.process.stderr is None:
            raise RuntimeError("the browser is not running")
        return self.process.stderr

    async def _listening(self) -> str:
        stream = self._stderr()
        while line := await stream.readline():
            if found := LISTENING.search(line):
                return found.group(1).decode()
        raise EOFError

    async def _drained(self) -> None:
        """The browser's stderr read to its end (a full pipe would stop the browser)."""
        stream = self._stderr()
        while line := await stream.readline():
            log.debug("chromium: %s", line.decode(errors="replace").rstrip())


def _remove_stale_profiles() -> None:
    """The profiles of harvesters that were killed before they could remove theirs."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PROFILE}*-*"):
        pid = folder.name.removeprefix(PROFILE).split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def _proportional(proc: Path) -> int:
    """A process's proportional set size in bytes (its resident size where Linux has no
    ``smaps_rollup``)."""
    try:
        for line in (proc / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int((proc / "statm").read_text().split()[1]) * PAGE_SIZE


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
