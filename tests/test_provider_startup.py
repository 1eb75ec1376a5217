"""``oai-provider serve`` and ``index`` as an owner runs them: started twice on one document
root, given a base URL without a scheme or another one, configured by file and environment,
started in a folder it cannot write or on a taken or impossible port. Real processes
throughout: each refusal is one line on stderr with the exit code, and the index a running
provider holds is never touched."""

from __future__ import annotations

import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sickle import Sickle

from tests.servers import HOST, RunningServer, free_port, start_command, wait_until_answers
from tests.sites import Manifest, make_site

CLI = [sys.executable, "-m", "server_module.cli"]
ROOT = str(Path(__file__).resolve().parent.parent)


def provider(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``oai-provider ARGS`` to its end (bounded); its exit code and output."""
    return subprocess.run(
        CLI + list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The refusal: exactly one line on stderr, no traceback."""
    lines = [line for line in done.stderr.splitlines() if " WARNING " not in line]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def identifiers(url: str) -> dict[str, bool]:
    """Every identifier the provider at ``url`` lists, with its deleted flag."""
    items = Sickle(url + "/oai").ListIdentifiers(metadataPrefix="oai_dc")
    return {header.identifier: header.deleted for header in items}


def indexed(index: Path) -> dict[str, bool]:
    """The index's identifiers with their deleted flag, read from the file itself."""
    with sqlite3.connect(index) as conn:
        rows = conn.execute("SELECT identifier, deleted FROM files").fetchall()
    return {identifier: bool(deleted) for identifier, deleted in rows}


@pytest.fixture
def site(tmp_path: Path) -> Manifest:
    return make_site(tmp_path / "www", pages=10, seed=7)


def serve_argv(site: Manifest, *args: str) -> list[str]:
    return [*CLI, "serve", str(site.root), "--workers", "1", "--threads", "2", *args]


# -- one provider per index -----------------------------------------------------------


def test_a_second_provider_is_refused_and_the_running_one_keeps_its_identifiers(
    site: Manifest,
) -> None:
    """Two real processes on one document root and its default index."""
    index = site.root.parent / f".{site.root.name}.oai-index.sqlite"
    with start_command(
        serve_argv(site, "--port", "{port}"), ready_path="/oai?verb=Identify"
    ) as first:
        before = identifiers(first.url)
        holder = f"process {first.process.pid}"
        # the same port taken, another base URL: refused before the index is touched
        second = provider(
            "serve", str(site.root), "--port", str(first.port), "--base-url", "http://other.example"
        )
        assert second.returncode == 1
        assert holder in one_line(second) and str(index) in second.stderr
        again = provider("index", str(site.root), "--base-url", "http://other.example", "--rebase")
        assert again.returncode == 1 and holder in one_line(again)
        after = identifiers(first.url)
    assert len(before) == len(site.public) and not any(before.values())
    assert after == before
    assert indexed(index) == before  # no tombstone left for a restart to serve


def test_the_lock_is_released_when_the_provider_is_killed(site: Manifest, tmp_path: Path) -> None:
    index = tmp_path / "idx.sqlite"
    argv = serve_argv(site, "--port", "{port}", "--index", str(index))
    with start_command(argv, ready_path="/oai?verb=Identify") as first:
        base = first.url
        first.process.kill()  # the master; its worker follows it
        first.process.wait(10)
    deadline = time.monotonic() + 30
    done = provider("index", str(site.root), "--index", str(index), "--base-url", base)
    while done.returncode == 1 and time.monotonic() < deadline:  # the orphaned worker exits
        time.sleep(0.2)
        done = provider("index", str(site.root), "--index", str(index), "--base-url", base)
    assert done.returncode == 0, done.stderr


# -- the base URL -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["127.0.0.1:8080", "www.example.org", "ftp://www.example.org", "/site"]
)
@pytest.mark.parametrize("command", ["serve", "index"])
def test_a_base_url_that_is_not_an_absolute_http_url_is_refused(
    site: Manifest, tmp_path: Path, url: str, command: str
) -> None:
    index = tmp_path / "idx.sqlite"
    done = provider(command, str(site.root), "--base-url", url, "--index", str(index), timeout=30)
    assert done.returncode == 2
    line = one_line(done)
    assert f"--base-url {url}" in line and "http" in line
    assert not index.exists()


def test_another_base_url_needs_rebase(site: Manifest, tmp_path: Path) -> None:
    index = tmp_path / "idx.sqlite"
    common = ["index", str(site.root), "--index", str(index)]
    assert provider(*common, "--base-url", "https://www.example.org").returncode == 0
    first = indexed(index)
    refused = provider(*common, "--base-url", "https://example.org")
    assert refused.returncode == 2
    line = one_line(refused)
    assert "--rebase" in line and f"{len(first)} items" in line and "deleted" in line
    assert indexed(index) == first
    # the setting, from the environment, says the same as the flag
    done = provider(*common, "--base-url", "https://example.org", env={"OAI_PROVIDER_REBASE": "1"})
    assert done.returncode == 0, done.stderr
    now = indexed(index)
    assert {i for i, deleted in now.items() if deleted} == set(first)
    renamed = {i.replace("https://www.", "https://", 1) for i in first}
    assert {i for i, deleted in now.items() if not deleted} == renamed


# -- serve's settings -------------------------------------------------------------------


def start_serve(argv: list[str], url: str, env: dict[str, str], log: Path) -> RunningServer:
    """``serve`` with its stderr kept in ``log``; answers at ``url`` (which its settings chose)."""
    with log.open("wb") as err:
        process = subprocess.Popen(
            argv, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=err
        )
    server = RunningServer(process, HOST, 0)
    try:
        wait_until_answers(url + "/oai?verb=Identify", process, 30)
    except Exception:
        server.stop()
        raise
    return server


def test_every_serve_option_is_a_setting_layered_file_environment_flag(
    site: Manifest, tmp_path: Path
) -> None:
    """The file names the base URL, the address and the pools; the environment's port beats
    the file's; a flag beats both."""
    file_port, env_port, flag_port = free_port(), free_port(), free_port()
    config = tmp_path / "provider.toml"
    config.write_text(
        f'base_url = "https://www.example.org"\nhost = "127.0.0.2"\nport = {file_port}\n'
        f"workers = 1\nthreads = 2\nrefresh_interval = 0\nindex_path = '{tmp_path / 'i'}'\n"
    )
    argv = [*CLI, "serve", str(site.root), "--config", str(config)]
    env = {"OAI_PROVIDER_PORT": str(env_port)}
    with start_serve(argv, f"http://127.0.0.2:{env_port}", env, tmp_path / "a.log") as server:
        listed = identifiers(f"http://127.0.0.2:{env_port}")
        assert server.process.poll() is None
    assert len(listed) == len(site.public)
    assert all(identifier.startswith("https://www.example.org/") for identifier in listed)
    flagged = [*argv, "--port", str(flag_port)]
    with start_serve(flagged, f"http://127.0.0.2:{flag_port}", env, tmp_path / "b.log"):
        assert set(identifiers(f"http://127.0.0.2:{flag_port}")) == set(listed)


def test_serve_without_a_base_url_says_which_it_uses(site: Manifest, tmp_path: Path) -> None:
    port = free_port()
    argv = serve_argv(site, "--port", str(port), "--index", str(tmp_path / "idx.sqlite"))
    url = f"http://{HOST}:{port}"
    with start_serve(argv, url, {}, tmp_path / "serve.log"):
        listed = identifiers(url)
    assert all(identifier.startswith(url + "/") for identifier in listed)
    said = [line for line in (tmp_path / "serve.log").read_text().splitlines() if url in line]
    assert said and "base URL" in said[0] and "--base-url" in said[0]


# -- start-up errors --------------------------------------------------------------------


@pytest.fixture
def readable_site() -> Iterator[Manifest]:
    """A site in a folder everyone can read but only root can write (as /var/www is)."""
    folder = Path(tempfile.mkdtemp(prefix="i34-"))
    try:
        folder.chmod(0o755)
        site = make_site(folder / "www", pages=3, seed=1)
        for path in [site.root, *site.root.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield site
    finally:
        shutil.rmtree(folder)


def as_another_user(argv: list[str]) -> list[str]:
    """Run as ``nobody`` when the tests run as root (root may write anywhere)."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]


def test_an_index_folder_that_cannot_be_written_is_one_line(readable_site: Manifest) -> None:
    folder = readable_site.root.parent
    if os.geteuid() != 0:
        folder.chmod(0o555)
    argv = as_another_user([*CLI, "serve", str(readable_site.root), "--port", str(free_port())])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    folder.chmod(0o755)
    assert done.returncode == 2
    line = one_line(done)
    index = folder / f".{readable_site.root.name}.oai-index.sqlite"
    assert str(index) in line and "--index" in line
    assert not index.exists()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--port", "99999"], "--port 99999"),
        (["--port", "0"], "--port 0"),
        (["--admin-email", "not-an-email"], "--admin-email not-an-email"),
        (["--workers", "0"], "--workers 0"),
    ],
)
def test_an_impossible_value_is_one_line(
    site: Manifest, tmp_path: Path, flags: list[str], named: str
) -> None:
    index = tmp_path / "idx.sqlite"
    done = provider("serve", str(site.root), "--index", str(index), *flags, timeout=30)
    assert done.returncode == 2
    assert named in one_line(done)
    assert not index.exists()


def test_a_port_in_use_is_one_line_at_once(site: Manifest, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        done = provider(
            "serve", str(site.root), "--port", str(port), "--index", str(tmp_path / "i")
        )
        took = time.monotonic() - started
    assert done.returncode == 2
    line = one_line(done)
    assert f"{HOST}:{port}" in line and "--port" in line
    assert took < 4, "gunicorn retries a taken port for 5 s; it must not be reached"


def test_index_prints_a_sentence(site: Manifest, tmp_path: Path) -> None:
    argv = ["index", str(site.root), "--index", str(tmp_path / "idx.sqlite")]
    done = provider(*argv, "--base-url", "https://www.example.org")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    sentence = (
        rf"\d+ files scanned \(\d+ hashed\): {len(site.public)} added, 0 changed, 0 deleted, "
        r"0 unchanged, in \d+\.\d\d s; committed"
    )
    assert re.fullmatch(re.escape(f"{tmp_path / 'idx.sqlite'}: ") + sentence, first), first
    # then the plugins (on by default) run to the end before the command exits
    last = done.stdout.splitlines()[-1]
    assert re.fullmatch(r"plugins: [1-9]\d* results in \d+\.\d\d s", last), last
