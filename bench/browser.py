"""``python -m bench browser [--pages N] [--tabs T] [--delay-factor K]``

Browser capture (``harvester harvest --mode crawl --browser``, default flags) against the way
brozzler records: the same Chromium driven page by page in the same number of tabs through
``warcprox`` (``bench/browserpeer.py``; warcprox from PyPI in a virtual environment of its own,
``bench/out/browser/warcprox-venv``). Everything is written below ``bench/out/browser/``:

1. a generated JavaScript site of ``--pages`` pages: each page's HTML holds no link; a shared
   script (``/js/app.js``) fetches the page's JSON (``/api/N.json``: its text and three
   links), makes the links, and loads the page's own image only when it is scrolled into view;
   each page also has one of ten shared stylesheets. The truth is each page's HTML, JSON and
   image, plus the script and the ten stylesheets;
2. nginx serves it on 127.0.0.2 (warcprox refuses to proxy 127.0.0.1);
3. ours, then the peer, each into a fresh folder: pages/s is the pages of the truth archived
   (a 200 ``response`` record) over the wall time of the process, start to exit; resources per
   page the truth's URLs archived over the pages; completeness the truth's URLs archived over
   all of them; CPU per page the process's and its children's (the browser, warcprox) CPU
   seconds over the pages; peak memory the largest sum, sampled every 0.2 s, over the process
   tree, of each process's resident set (RSS) and of its proportional set (PSS: a page
   shared by the browser's processes counted once).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from bench.crawl import NGINX_CONF, nginx_binary
from bench.harness import Report
from harvester.browser.browser import default_tabs
from tests.js_site import PNG
from tests.servers import RunningServer, free_port, wait_until_answers

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "browser"
HOST = "127.0.0.2"
TIMEOUT = 3600.0
APP = """const id = document.body.dataset.id;
fetch('/api/' + id + '.json').then(r => r.json()).then(d => {
  document.getElementById('text').textContent = d.text;
  for (const href of d.links) {
    const a = document.createElement('a'); a.href = href; a.textContent = href;
    document.getElementById('links').append(a, ' ');
  }
});
new IntersectionObserver((seen, obs) => {
  if (!seen.some(e => e.isIntersecting)) return;
  document.getElementById('image').src = '/img/' + id + '.png'; obs.disconnect();
}).observe(document.getElementById('image'));
"""
PAGE = """<!doctype html><html><head><title>Page {i}</title>
<link rel="stylesheet" href="/css/{k}.css"><script src="/js/app.js" defer></script></head>
<body data-id="{i}"><h1>Page {i}</h1><p id="text"></p><p id="links"></p>
<div style="height:2400px"></div><img id="image" alt="lazy"></body></html>"""


def make_site(root: Path, pages: int) -> set[str]:
    """The site's files; the truth's paths."""
    shutil.rmtree(root, ignore_errors=True)
    for sub in ("p", "api", "img", "css", "js"):
        (root / sub).mkdir(parents=True)
    (root / "js" / "app.js").write_text(APP)
    truth = {"/js/app.js"}
    for k in range(10):
        (root / "css" / f"{k}.css").write_text(f"h1 {{ color: #{k}{k}{k} }}\n")
        truth.add(f"/css/{k}.css")
    for i in range(pages):
        links = sorted({f"/p/{j}.html" for j in (2 * i + 1, 2 * i + 2, (7 * i + 3) % pages)
                        if j < pages})  # fmt: skip
        (root / "p" / f"{i}.html").write_text(PAGE.format(i=i, k=i % 10))
        (root / "api" / f"{i}.json").write_text(json.dumps({"text": f"text {i}", "links": links}))
        (root / "img" / f"{i}.png").write_bytes(PNG + str(i).encode())  # each its own digest
        truth |= {f"/p/{i}.html", f"/api/{i}.json", f"/img/{i}.png"}
    return truth


@dataclass(frozen=True)
class Measured:
    seconds: float
    cpu: float
    peak_rss: int
    peak_pss: int


def tree_memory(root: int) -> tuple[int, int]:
    """The RSS and PSS sums, in bytes, of ``root`` and its descendants."""
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
                parents[int(proc.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            except (OSError, ValueError):
                continue
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    rss = pss = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return rss, pss


def measured(argv: list[str], log: Path) -> Measured:
    """``argv`` run to its end under ``bench/childusage.py``, its tree's memory sampled."""
    report = log.with_suffix(".usage.json")
    wrapped = [sys.executable, "-S", str(REPO / "bench" / "childusage.py"), str(report), "--"]
    with open(log, "wb") as err:
        proc = subprocess.Popen([*wrapped, *argv], stdout=err, stderr=err, start_new_session=True)
    peaks = [0, 0]

    def sample() -> None:
        while proc.poll() is None:
            rss, pss = tree_memory(proc.pid)
            peaks[0], peaks[1] = max(peaks[0], rss), max(peaks[1], pss)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait(timeout=TIMEOUT)
    sampler.join()
    if code not in (0, 3):
        raise RuntimeError(f"{argv[:3]} exited with {code}; see {log}")
    usage = json.loads(report.read_text())
    cpu = usage["usage"]["ru_utime"] + usage["usage"]["ru_stime"]
    return Measured(usage["seconds"], cpu, peaks[0], peaks[1])


def archived(warcs: Path, base: str) -> set[str]:
    """The paths on the site of the 200 ``response`` records in ``warcs``."""
    found = set()
    for path in sorted(warcs.rglob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                status = record.http_headers and record.http_headers.get_statuscode()
                if record.rec_type == "response" and uri.startswith(base) and status == "200":
                    found.add(uri[len(base) :])
    return found


def warcprox_bin() -> str:
    venv = OUT / "warcprox-venv"
    binary = venv / "bin" / "warcprox"
    if not binary.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=TIMEOUT)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "warcprox"],
                       check=True, timeout=TIMEOUT)  # fmt: skip
    return str(binary)


def serving(root: Path, prefix: Path) -> RunningServer:
    port = free_port(HOST)
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / "tmp" / sub).mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    conf.write_text(user + NGINX_CONF.format(prefix=prefix, host=HOST, port=port, root=root))
    argv = [nginx_binary(), "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(conf),
            "-g", "daemon off;"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = RunningServer(proc, HOST, port)
    wait_until_answers(f"{server.url}/p/0.html", proc, 30.0)
    return server


def run(argv: list[str]) -> Report:
    parser = argparse.ArgumentParser(prog="bench browser")
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--tabs", type=int, default=0, help="[default: --browser's, by cores]")
    parser.add_argument("--delay-factor", help="ours: --delay-factor  [default: the crawl's]")
    args = parser.parse_args(argv)
    tabs = default_tabs(args.tabs)
    shutil.rmtree(OUT / "ours", ignore_errors=True)
    shutil.rmtree(OUT / "peer", ignore_errors=True)
    truth = make_site(OUT / "site", args.pages)
    warcprox = warcprox_bin()
    server = serving((OUT / "site").resolve(), OUT / "nginx")
    try:
        start = f"{server.url}/p/0.html"
        ours_argv = [sys.executable, "-m", "harvester.cli", "harvest", start, "--mode", "crawl",
                     "--browser", "--out", str(OUT / "ours"), "--quiet"]  # fmt: skip
        if args.tabs:
            ours_argv += ["--browser-tabs", str(tabs)]
        if args.delay_factor is not None:
            ours_argv += ["--delay-factor", args.delay_factor]
        ours = measured(ours_argv, OUT / "ours.log")
        peer_argv = [sys.executable, "-m", "bench.browserpeer", start, str(OUT / "peer"),
                     "--tabs", str(tabs), "--warcprox", warcprox]  # fmt: skip
        peer = measured(peer_argv, OUT / "peer.log")
    finally:
        server.stop()
    got = {
        "ours": archived(OUT / "ours" / "warcs", server.url) & truth,
        "warcprox": archived(OUT / "peer", server.url) & truth,
    }
    return _report(args.pages, tabs, truth, got, ours, peer)


def _report(
    pages: int, tabs: int, truth: set[str], got: dict[str, set[str]], ours: Measured, peer: Measured
) -> Report:
    def n_pages(paths: set[str]) -> int:
        return sum(1 for p in paths if p.startswith("/p/"))

    runs = {"ours": ours, "warcprox": peer}
    rate = {k: n_pages(got[k]) / runs[k].seconds for k in runs}
    per_page = {k: len(got[k]) / max(1, n_pages(got[k])) for k in runs}
    complete = {k: len(got[k]) / len(truth) for k in runs}
    cpu = {k: runs[k].cpu / max(1, n_pages(got[k])) for k in runs}
    mib = 1 << 20
    report = Report(
        "browser",
        ["metric", "ours", "Chromium + warcprox", "ratio"],
        [
            ["pages/s", rate["ours"], rate["warcprox"], rate["ours"] / rate["warcprox"]],
            [
                "resources per page",
                per_page["ours"],
                per_page["warcprox"],
                per_page["ours"] / per_page["warcprox"],
            ],
            [
                "completeness",
                complete["ours"],
                complete["warcprox"],
                complete["ours"] / complete["warcprox"],
            ],
            ["CPU s per page", cpu["ours"], cpu["warcprox"], cpu["ours"] / cpu["warcprox"]],
            [
                "peak RSS of the tree, MiB",
                ours.peak_rss / mib,
                peer.peak_rss / mib,
                ours.peak_rss / peer.peak_rss,
            ],
            [
                "peak PSS of the tree, MiB",
                ours.peak_pss / mib,
                peer.peak_pss / mib,
                ours.peak_pss / peer.peak_pss,
            ],
        ],
    )
    report.figures = {
        "pages": pages,
        "tabs": tabs,
        "pages_per_s_ratio": round(rate["ours"] / rate["warcprox"], 3),
        "completeness_ours": round(complete["ours"], 4),
        "completeness_warcprox": round(complete["warcprox"], 4),
        "peak_rss_mib_ours": round(ours.peak_rss / mib),
    }
    report.notes = [
        f"{pages} pages, {len(truth)} URLs in the truth; {tabs} tabs each; nginx on {HOST}",
        f"missed by ours: {sorted(truth - got['ours'])[:10]}",
        f"missed by warcprox: {sorted(truth - got['warcprox'])[:10]}",
    ]
    return report
