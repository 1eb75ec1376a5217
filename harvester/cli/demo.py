"""``harvester demo``: the README's main job, end to end, on this machine only.

1. generate a small sample site;
2. start the project's provider on a free loopback port, in a child process (gunicorn);
3. harvest the site into ``OUT/collection``;
4. edit, add and delete a few files, let the provider see them, and harvest again;
5. print both summaries, where the output is and how to replay it;
6. stop the provider.
"""

from __future__ import annotations

import functools
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import click

from coop_common.exitcode import ExitCode
from harvester.run.assembly import build_harvest
from harvester.samplesite import make_site
from harvester.settings import load_settings
from harvester.summary import Summary

MARKER = ".harvester-demo"


def run_demo(out: Path, as_json: bool = False) -> int:
    """The demo; with ``as_json`` its story goes to stderr and stdout gets one JSON object."""
    say = functools.partial(click.echo, err=as_json)
    out = out.resolve()
    _fresh(out)
    site = make_site(out / "site", pages=120, seed=1)
    say(f"1. generated a sample site of {len(site.public)} files in {site.root}")
    index = out / "provider-index.sqlite"
    provider = _Provider(site.root, index)
    # As a website owner starts: the index made, its plugins' analyses done, then served (a
    # first serve lists at once and restamps each record as its analyses land: the next
    # incremental harvest would list them all again).
    provider.index_site()
    with provider:
        say(f"2. the provider serves it at {provider.url} (OAI-PMH: {provider.url}/oai)")
        collection = out / "collection"
        time.sleep(2.1)  # so the incremental list's one-second overlap holds only the changes
        first = _harvest(provider.url, collection)
        _report("3. first harvest", first, say)
        time.sleep(1.1)  # the changes get a later datestamp than the first list's start
        changed = _change(site.root)
        _refresh(site.root, index, provider.url)
        say(f"4. changed the site: {', '.join(changed)}")
        second = _harvest(provider.url, collection)
        _report("   incremental harvest", second, say)
    say(f"5. WARC files:  {collection / 'warcs'}")
    say(f"   CDXJ index:  {collection / 'indexes' / 'index.cdxj'}")
    say(f"   DIDL export: harvester didl {collection} --to {out / 'didl'}")
    say(
        "   replay:      pip install pywb && wb-manager init demo && "
        f"wb-manager add demo {collection / 'warcs'}/*.warc.gz && wayback"
    )
    say("6. provider stopped")
    if as_json:
        result = {"collection": str(collection), "site_files": len(site.public)}
        result |= {"initial": first.as_dict(), "incremental": second.as_dict()}
        click.echo(json.dumps(result, sort_keys=True))
    return ExitCode.OK if second.coverage == 1.0 else ExitCode.PARTIAL


def _fresh(out: Path) -> None:
    """Start from nothing, but only ever delete a folder an earlier demo made."""
    if out.exists():
        if not (out / MARKER).exists():
            raise click.UsageError(f"{out} exists and was not made by the demo; pick --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("made by harvester demo\n")


def _harvest(url: str, collection: Path) -> Summary:
    settings = load_settings(site_url=url, out=collection, quiet=True, environ={})
    return build_harvest(settings).run()


def _report(title: str, summary: Summary, say: Callable[[str], None]) -> None:
    keys = ("listed", "fetched", "unchanged", "deleted", "failed", "bytes", "seconds")
    data = summary.as_dict()
    say(f"{title}: " + json.dumps({k: data[k] for k in (*keys, "coverage")}))


def _change(root: Path) -> list[str]:
    edited = sorted(root.glob("docs/page*.html"))[:2]
    for path in edited:
        path.write_bytes(path.read_bytes().replace(b"</body>", b"<p>edited</p></body>"))
    added = [root / "news" / "fresh-1.html", root / "files" / "fresh-2.txt"]
    added[0].write_text("<html><head><title>Fresh</title></head><body>new</body></html>\n")
    added[1].write_text("a new file\n")
    gone = root / "files" / "bundle.zip"
    gone.unlink()
    names = [f"edited {p.name}" for p in edited] + [f"added {p.name}" for p in added]
    return [*names, f"deleted {gone.name}"]


def _refresh(root: Path, index: Path, base_url: str) -> None:
    from server_module.index.fileindex import FileIndex

    with FileIndex(index, root, base_url) as idx:
        idx.refresh()


class _Provider:
    """The project's provider under gunicorn, in a child process on a free loopback port."""

    def __init__(self, docroot: Path, index: Path) -> None:
        self.docroot, self.index = docroot, index
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def index_site(self) -> None:
        """``oai-provider index``: the rows and the plugins' analyses, to their end."""
        cmd = [*self._command("index"), "--base-url", self.url]
        with open(self.index.with_suffix(".log"), "ab") as log:
            if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False).returncode:
                raise click.ClickException(f"indexing the site failed; see {log.name}")

    def __enter__(self) -> _Provider:
        cmd = [*self._command("serve"), "--port", str(self.port), "--workers", "1",
               "--refresh-interval", "0"]  # fmt: skip
        log = open(self.index.with_suffix(".log"), "ab")
        self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        _wait_for(f"{self.url}/oai?verb=Identify", self.process)
        return self

    def _command(self, verb: str) -> list[str]:
        module = [sys.executable, "-m", "server_module.cli", verb]
        return [*module, str(self.docroot), "--index", str(self.index)]

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise click.ClickException(f"the provider exited with {process.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise click.ClickException(f"the provider did not answer {url} within {timeout:.0f}s")
