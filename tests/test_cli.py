"""The ``harvester`` command as a user runs it: exit codes and one-line errors.

Each run is a real process (``.venv/bin/harvester``, or ``main(argv)`` in this one) against
real servers on loopback; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from coop_common.exitcode import ExitCode
from harvester.cli import main
from tests.commands import harvester
from tests.conftest import start_provider
from tests.servers import RunningServer, free_port, start_wsgi
from tests.sites import make_site

README = Path(__file__).resolve().parent.parent / "README.md"


def run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return harvester(*argv, timeout=timeout)


def one_line(stderr: str) -> str:
    """The one line of a failed command's stderr; fails on a traceback or more lines."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("harvester: "), stderr
    return lines[0]


@pytest.fixture(scope="module")
def hello() -> RunningServer:  # type: ignore[misc]
    """A plain-HTTP server (no TLS) on a loopback port."""
    with start_wsgi("tests.apps:hello") as server:
        yield server


# -- issue 9: a run that could not reach the site fails with the cause ------------------


def test_a_closed_port_fails_naming_the_url_and_the_cause(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/"
    done = run("harvest", url, "--out", str(tmp_path / "out"), "--quiet")
    assert done.returncode == ExitCode.FAILED
    line = one_line(done.stderr)
    assert url in line and "refused" in line.lower()
    assert "coverage" not in done.stdout


def test_an_unknown_host_fails_naming_the_url_and_the_cause(tmp_path: Path) -> None:
    url = "http://no-such-site.invalid/"  # RFC 6761: never resolves, and no query is sent
    done = run("harvest", url, "--out", str(tmp_path / "out"), "--quiet")
    assert done.returncode == ExitCode.FAILED
    line = one_line(done.stderr)
    assert url in line and "unknown host" in line
    assert "coverage" not in done.stdout


def test_https_on_a_plain_http_port_fails_naming_tls(hello: RunningServer, tmp_path: Path) -> None:
    url = f"https://{hello.host}:{hello.port}/"
    done = run("harvest", url, "--out", str(tmp_path / "out"), "--quiet")
    assert done.returncode == ExitCode.FAILED
    line = one_line(done.stderr)
    assert url in line and "TLS" in line
    assert "coverage" not in done.stdout


def test_one_failing_resource_among_good_ones_exits_3(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    site = make_site(tmp_path / "www", pages=20, seed=3)
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        (site.root / "files" / "bundle.zip").unlink()  # listed (not re-indexed), answers 404
        code = main(["harvest", server.url, "--out", str(tmp_path / "out"), "--quiet"])
    assert code == ExitCode.PARTIAL
    assert "failed=1" in capsys.readouterr().out


# -- issue 10: bad input is refused before the disk or the network is touched -----------


@pytest.mark.parametrize(
    "argv",
    [
        ["not-a-url"],
        ["ftp://127.0.0.1/site/"],
        ["http://"],
        ["http://127.0.0.1:1/", "--oai", "gopher://127.0.0.1/oai"],
        ["http://127.0.0.1:1/", "--seed", "not-a-url"],
    ],
)
def test_a_bad_url_is_a_usage_error_that_creates_nothing(tmp_path: Path, argv: list[str]) -> None:
    out = tmp_path / "out"
    done = run("harvest", *argv, "--out", str(out))
    assert done.returncode == ExitCode.USAGE
    line = one_line(done.stderr)
    bad = argv[-1] if len(argv) > 1 else argv[0]
    assert repr(bad) in line
    assert not out.exists()


def test_an_out_folder_under_a_regular_file_is_one_line(
    hello: RunningServer, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("not a folder")
    out = tmp_path / "file" / "out"
    done = run("harvest", hello.url, "--out", str(out), "--quiet")
    assert done.returncode == ExitCode.FAILED
    line = one_line(done.stderr)
    assert str(out.parent) in line and "Not a directory" in line


def test_an_out_folder_in_proc_is_one_line(hello: RunningServer) -> None:
    out = Path(f"/proc/harvester-test-{os.getpid()}/out")  # /proc refuses new folders, even root
    done = run("harvest", hello.url, "--out", str(out), "--quiet")
    assert done.returncode == ExitCode.FAILED
    line = one_line(done.stderr)
    assert str(out.parent) in line
    assert not out.parent.exists()


# -- didl and demo follow the same scheme -----------------------------------------------


def test_didl_into_a_folder_under_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "out" / "warcs").mkdir(parents=True)
    (tmp_path / "file").write_text("not a folder")
    to = tmp_path / "file" / "didl"
    done = run("didl", str(tmp_path / "out"), "--to", str(to))
    assert done.returncode == ExitCode.FAILED
    assert str(to) in one_line(done.stderr)


def test_didl_of_a_file_that_is_not_a_warc_is_one_line(tmp_path: Path) -> None:
    warcs = tmp_path / "out" / "warcs"
    warcs.mkdir(parents=True)
    bad = warcs / "broken.warc.gz"
    bad.write_bytes(bytes(range(256)) * 8)  # neither gzip nor a WARC or ARC header
    done = run("didl", str(tmp_path / "out"), "--to", str(tmp_path / "didl"))
    assert done.returncode == ExitCode.FAILED
    assert str(bad) in one_line(done.stderr)


def test_didl_of_a_missing_collection_is_a_usage_error(tmp_path: Path) -> None:
    done = run("didl", str(tmp_path / "nothing"), "--to", str(tmp_path / "didl"))
    assert done.returncode == ExitCode.USAGE
    assert str(tmp_path / "nothing") in one_line(done.stderr)
    assert not (tmp_path / "didl").exists()


def test_demo_refuses_a_folder_it_did_not_make_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    done = run("demo", "--out", str(tmp_path / "mine"))
    assert done.returncode == ExitCode.USAGE
    assert str(tmp_path / "mine") in one_line(done.stderr)


# -- the codes are documented ---------------------------------------------------------


def test_help_and_readme_document_every_exit_code() -> None:
    done = run("--help")
    assert done.returncode == ExitCode.OK
    readme = README.read_text(encoding="utf-8")
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in ExitCode:
        assert f"{code.value} {code.meaning}" in " ".join(done.stdout.split()), code
        assert f"| {code.value} | {code.meaning} |" in section, code


def test_demo_with_json_prints_one_object_and_tells_its_story_on_stderr(tmp_path: Path) -> None:
    done = run("demo", "--out", str(tmp_path / "demo"), "--json")
    assert done.returncode == ExitCode.OK, done.stderr
    result = json.loads(done.stdout)
    assert result["initial"]["fetched"] == result["site_files"] and result["initial"]["failed"] == 0
    assert (result["incremental"]["fetched"], result["incremental"]["deleted"]) == (4, 1)
    # the incremental list names the five changes alone: no record restamped by the analyses
    assert result["incremental"]["listed"] == 5
    assert "1. generated a sample site" in done.stderr
