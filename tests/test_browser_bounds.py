"""The browser's bounds, in Debian's real Chromium against ``tests/js_site.py``: a crashed tab
fails its page and the next page loads; past its memory bound the browser restarts and goes
on, its memory read at most every few seconds; four tabs share two renderer processes; past
its request cap a page's requests are refused; a crawl killed (SIGKILL) or interrupted
(Ctrl-C) leaves no browser behind and resumes to the whole site."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from harvester.browser.browser import Browser, PageFailed, PageLimits
from tests.js_site import serve_js_site
from tests.test_browser_capture import EVERYTHING, paths


def browser(**limits: int | float) -> Browser:
    return Browser("chromium", 1, PageLimits(seconds=20.0, **limits), max_rss=1 << 40)  # type: ignore[arg-type]


def test_a_crashed_tab_fails_its_page_and_the_next_page_loads() -> None:
    async def run(url: str) -> tuple[str, str]:
        b = browser()
        await b.start()
        try:
            with pytest.raises(PageFailed) as failed:
                await b.load("chrome://crash")
            page = await b.load(url + "/")
            return str(failed.value), page.text
        finally:
            await b.close()

    with serve_js_site() as site:
        error, text = asyncio.run(run(site.url))
    assert "crashed" in error or "no answer" in error
    assert "Content fetched by a script" in text


def test_past_its_memory_bound_the_browser_restarts_and_goes_on() -> None:
    async def run(url: str) -> tuple[int, list[str]]:
        b = browser()
        b.max_rss = 1  # any browser is past it
        await b.start()
        try:
            texts = [(await b.load(url + path)).text for path in ("/", "/deep/a")]
            return b.restarts, texts
        finally:
            await b.close()

    with serve_js_site() as site:
        restarts, texts = asyncio.run(run(site.url))
    assert restarts == 2
    assert "Content fetched by a script" in texts[0] and "Deep text a, fetched" in texts[1]


def test_the_browser_s_memory_is_read_once_for_pages_loaded_within_seconds() -> None:
    """Reading every process's ``smaps_rollup`` costs the kernel 40-80 ms: not after each
    page, but at most once every ``MEMORY_EVERY`` seconds."""

    async def run(url: str) -> int:
        b = browser()
        await b.start()
        reads, read = [], b.chromium.rss
        b.chromium.rss = lambda: reads.append(1) or read()  # type: ignore[method-assign]
        try:
            for _ in range(4):
                await b.load(url + "/deep/a")
            return len(reads)
        finally:
            await b.close()

    with serve_js_site() as site:
        reads = asyncio.run(run(site.url))
    assert 1 <= reads < 4


def test_four_tabs_share_two_renderer_processes() -> None:
    """Chromium's renderers, each 70-130 MB resident, are held to half the tabs (at least 2):
    without the limit 4 tabs had 7."""

    async def run(url: str) -> int:
        b = Browser("chromium", 4, PageLimits(seconds=20.0), max_rss=1 << 40)
        await b.start()
        try:
            pages = ("/", "/section/a", "/deep/a", "/deep/b")
            loaded = await asyncio.gather(*(b.load(url + path) for path in pages))
            assert all(page.rendered for page in loaded)
            assert b.chromium.process is not None
            return len(renderers(b.chromium.process.pid))
        finally:
            await b.close()

    with serve_js_site() as site:
        assert asyncio.run(run(site.url)) == 2


def renderers(group: int) -> list[int]:
    """The renderer processes in the browser's process group."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit():
                continue
            stat = (proc / "stat").read_text()
            ours = int(stat[stat.rindex(")") + 2 :].split()[2]) == group
            if ours and b"--type=renderer" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def test_past_its_cap_a_page_s_requests_are_refused() -> None:
    async def run(url: str) -> tuple[int, int]:
        b = browser(max_requests=3)
        await b.start()
        try:
            page = await b.load(url + "/")
            return len(page.exchanges), page.refused
        finally:
            await b.close()

    with serve_js_site() as site:
        recorded, refused = asyncio.run(run(site.url))
    assert recorded == 3 and refused >= 3  # the start page asks for 7


def browsers_of(pid: int) -> list[int]:
    """The processes of the browser that harvester ``pid`` started (by its profile's name)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                proc.name.isdigit()
                and f"harvester-chromium-{pid}-".encode() in (proc / "cmdline").read_bytes()
            ):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def gone(pid: int, within: float = 30.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not browsers_of(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_a_crawl_stopped_midway_leaves_no_browser_and_resumes(tmp_path: Path, how: int) -> None:
    out = tmp_path / "coll"
    with serve_js_site() as site:
        argv = [sys.executable, "-m", "harvester.cli", "harvest", site.url + "/"]
        argv += ["--mode", "crawl", "--browser", "--out", str(out), "--quiet"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        end = time.monotonic() + 120
        while not any(p == "/deep/a" for _, p, _ in site.asked) and time.monotonic() < end:
            time.sleep(0.05)  # polled: the crawl is at its third level
        assert browsers_of(proc.pid)
        proc.send_signal(how)
        code = proc.wait(timeout=60)
        assert code == (-9 if how == signal.SIGKILL else 130), proc.stderr.read()[-2000:]
        assert gone(proc.pid)
        resumed = subprocess.run(argv, capture_output=True, text=True, timeout=400)
    # 3 when /no-answer failed in this run; 0 when it had failed before the stop
    assert resumed.returncode in (0, 3), resumed.stderr[-2000:]
    got: Counter[str] = paths(out)
    assert set(got) >= EVERYTHING, EVERYTHING - set(got)
