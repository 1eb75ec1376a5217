"""The provider's plugin runner over real sites and real child processes: limits, counting,
the index's ``analyses`` table and its migration, the ``[[plugin]]`` settings."""

from __future__ import annotations

import io
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from coop_common.exitcode import ExitCode
from coop_common.settings import SettingsError
from server_module.app import file_index
from server_module.cli import main as provider_main
from server_module.index.fileindex import FileIndex
from server_module.index.snapshot import Selection
from server_module.plugins.child import STDERR_KEPT, Limits
from server_module.plugins.lineup import lineup
from server_module.plugins.runner import PluginRunner
from server_module.settings import load_settings

BASE = "http://example.org"
PY = sys.executable
LIMITS = Limits(5.0, 1 << 30, 1 << 20)
T0 = 1_700_000_000


def runner(
    root: Path,
    *tables: dict[str, object],
    builtins: tuple[str, ...] = (),
    limits: Limits = LIMITS,
) -> PluginRunner:
    settings = load_settings(docroot=root, base_url=BASE)
    specs = load_settings(docroot=root, base_url=BASE, plugin=tables).plugin
    return lineup(
        builtins, specs, timeout=limits.seconds, limits=limits, workers=2, docroot=settings.docroot
    )


def index(root: Path, plugins: PluginRunner | None, now: float = T0) -> FileIndex:
    """The index of ``root``, whose clock says ``now``."""
    return FileIndex(
        root.parent / "index.sqlite", root, BASE, plugins=plugins, clock=lambda: now
    ).open()


def analyses(idx: FileIndex) -> dict[tuple[str, str], tuple[str, bytes]]:
    with idx.snapshot() as snap:
        records = snap.records(Selection(), limit=1000)
    return {
        (r.relpath.decode(), a.label): (a.status, a.output) for r in records for a in r.analyses
    }


def make_root(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


COUNT = {
    "label": "count",
    "command": [PY, "-c", "import sys; print(len(open(sys.argv[1],'rb').read()))", "%s"],
}


def test_a_custom_command_runs_on_each_file_and_its_output_is_kept(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"a.txt": b"12345", "b.html": b"<p>x</p>"})
    idx = index(root, runner(root, COUNT))
    stats = idx.refresh()
    assert stats is not None and stats.analysed == 2
    assert analyses(idx) == {
        ("a.txt", "count"): ("ok", b"5\n"),
        ("b.html", "count"): ("ok", b"8\n"),
    }


def test_a_hanging_plugin_is_cut_at_its_limit_and_the_refresh_goes_on(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"a.txt": b"x"})
    hang = {
        "label": "hang",
        "command": [PY, "-c", "import time; time.sleep(600)", "%s"],
        "timeout": 1,
    }
    idx = index(root, runner(root, hang, COUNT))
    started = time.monotonic()
    stats = idx.refresh()
    assert time.monotonic() - started < 30
    assert stats is not None and stats.added == 1
    found = analyses(idx)
    assert found[("a.txt", "hang")][0] == "timeout"
    assert found[("a.txt", "count")] == ("ok", b"1\n")
    with idx.snapshot() as snap:
        assert snap.get_by_relpath(b"a.txt") is not None  # the file is listed all the same


def test_a_plugin_that_floods_its_output_is_cut_at_the_output_limit(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"a.txt": b"x"})
    flood = {
        "label": "flood",
        "command": [
            PY,
            "-c",
            "import sys\nwhile True: sys.stdout.buffer.write(b'y' * 65536)",
            "%s",
        ],
    }
    idx = index(root, runner(root, flood, limits=Limits(20.0, 1 << 30, 100_000)))
    idx.refresh()
    status, output = analyses(idx)[("a.txt", "flood")]
    assert status == "output-limit"
    assert len(output) <= 100_000 + 1 + STDERR_KEPT  # the output to its limit, then the error


def test_a_plugin_over_its_memory_limit_fails_and_is_recorded(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"a.txt": b"x"})
    greedy = {"label": "greedy", "command": [PY, "-c", "b = bytearray(800 << 20)", "%s"]}
    idx = index(root, runner(root, greedy, limits=Limits(20.0, 256 << 20, 1 << 20)))
    idx.refresh()
    status, output = analyses(idx)[("a.txt", "greedy")]
    assert status == "failed"
    assert b"MemoryError" in output


def test_an_unchanged_file_is_never_analysed_twice(tmp_path: Path) -> None:
    root = make_root(tmp_path, {f"{i}.txt": str(i).encode() for i in range(10)})
    (root / "copy.txt").write_bytes(b"3")  # the same bytes as 3.txt: analysed once
    plugins = runner(root, COUNT, builtins=("libmagic",))
    idx = index(root, plugins)
    idx.refresh()
    assert plugins.runs == {"count": 10, "libmagic": 10}
    idx.refresh()
    idx.refresh()
    assert plugins.runs == {"count": 10, "libmagic": 10}
    (root / "4.txt").write_bytes(b"four")
    (root / "moved.txt").write_bytes(b"5")  # a known version under a new name
    idx.refresh()
    assert plugins.runs == {"count": 11, "libmagic": 11}
    assert analyses(idx)[("4.txt", "count")] == ("ok", b"4\n")


def test_an_index_made_before_plugins_is_migrated_and_its_files_analysed_once(
    tmp_path: Path,
) -> None:
    root = make_root(tmp_path, {"a.txt": b"aa", "b.txt": b"bbb"})
    old = index(root, None)
    old.refresh()
    with sqlite3.connect(old.path) as conn:  # as version 1 left it
        conn.execute("DROP TABLE analyses")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        (before,) = conn.execute("SELECT max(datestamp) FROM files").fetchone()
    old.close()
    plugins = runner(root, COUNT)
    idx = index(root, plugins, now=T0 + 100)
    idx.refresh()
    assert plugins.runs == {"count": 2}
    with idx.snapshot() as snap:
        assert before == T0
        assert all(r.datestamp == T0 + 100 for r in snap.records(Selection(), limit=10))
    idx.refresh()
    assert plugins.runs == {"count": 2}
    with sqlite3.connect(idx.path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "2",
        )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"label": "x", "command": "file %s"}, "argument list"),
        ({"label": "x", "command": ["file"]}, "'%s' argument"),
        ({"command": ["file", "%s"]}, "needs a label"),
        ({"label": "x", "command": ["file", "%s"], "shell": True}, "unknown key(s) shell"),
        ({"label": "x", "command": ["file", "%s"], "timeout": -1}, "positive number"),
    ],
)
def test_a_bad_plugin_table_is_an_error_that_names_it(
    tmp_path: Path, table: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError, match="plugin") as caught:
        load_settings(docroot=tmp_path, base_url=BASE, plugin=(table,))
    assert message in str(caught.value)


def test_plugin_tables_come_from_the_settings_file(tmp_path: Path) -> None:
    config = tmp_path / "provider.toml"
    config.write_text(
        'builtin_plugins = ["libmagic"]\n'
        "[[plugin]]\n"
        'label = "wc"\n'
        'command = ["wc", "-c", "%s"]\n'
        'version = ["wc", "--version"]\n'
        'mime = ["text/*"]\n'
    )
    png = io.BytesIO()
    Image.new("RGB", (2, 2)).save(png, "PNG")
    root = make_root(tmp_path, {"a.txt": b"abc", "b.png": png.getvalue()})
    settings = load_settings(config_file=config, docroot=root, base_url=BASE)
    idx = file_index(settings).open()
    idx.refresh()
    found = analyses(idx)
    assert found[("a.txt", "wc")] == ("ok", b"3 a.txt\n")  # the root's path taken out
    assert ("b.png", "wc") not in found
    assert found[("b.png", "libmagic")][1].startswith(b"image/png\n")
    assert idx.plugins is not None and idx.plugins.plugin("wc").tool_version.startswith("wc")


def test_plugins_off_runs_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"a.txt": b"abc"})
    settings = load_settings(docroot=root, base_url=BASE, plugins=False)
    idx = file_index(settings).open()
    idx.refresh()
    assert idx.plugins is None and analyses(idx) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[plugin]]\nlabel = "x"\ncommand = "file %s"\n',
            "plugin 'x': command must be an argument list",
        ),
        ('builtin_plugins = ["nope"]\n', "builtin_plugins: unknown plugin(s) nope"),
    ],
)
def test_a_bad_plugin_setting_is_one_line_and_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    config = tmp_path / "provider.toml"
    config.write_text(text)
    root = make_root(tmp_path, {"a.txt": b"x"})
    argv = ["index", str(root), "--base-url", BASE, "--config", str(config)]
    assert provider_main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"oai-provider: {message}") and err.count("\n") == 1
