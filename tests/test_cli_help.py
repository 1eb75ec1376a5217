"""``harvester harvest --help`` and ``watch --help`` as a user reads them: every flag has help
text, grouped by mode, and shows the default its setting really has (read here from the
settings' dataclasses, not from the help's code); a choice flag refuses a typo."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest

from coop_common.exitcode import ExitCode
from harvester.cli.commands import cli, harvest, watch
from harvester.recrawl.bounds import Bounds
from harvester.settings import HarvestSettings
from server_module.cli import cli as provider
from tests.commands import HARVESTER

SETTINGS = {
    f.name: f.default
    for f in dataclasses.fields(HarvestSettings)
    if f.default is not dataclasses.MISSING  # out: required
}
SCORE = ("--score", "backlink")
WATCH_SETTINGS = {**SETTINGS, "max_interval": Bounds().max_interval}


def help_of(command: str) -> str:
    done = subprocess.run(
        [HARVESTER, command, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == ExitCode.OK, done.stderr
    return done.stdout


def entries(text: str) -> dict[str, str]:
    """Each option's entry of a help text, by its first flag, its lines joined."""
    found: dict[str, str] = {}
    current = ""
    for line in text.splitlines():
        if not line.startswith(" ") or not line.strip():
            current = ""
            continue
        head = re.match(r"  (--?[\w-]+)", line)
        if head:
            current = head.group(1)
            found[current] = ""
        if current:
            found[current] += " " + " ".join(line.split())
    return found


def shown_default(value: Any) -> str | None:
    """The default the help must show: None for an empty one or a flag (off)."""
    if isinstance(value, bool) or value in (None, (), ""):
        return None
    return str(value)


@pytest.mark.parametrize(
    ("command", "settings"), [("harvest", SETTINGS), ("watch", WATCH_SETTINGS)]
)
def test_every_option_has_help_and_its_settings_default(
    command: str, settings: dict[str, Any]
) -> None:
    text = help_of(command)
    found = entries(text)
    params = (harvest if command == "harvest" else watch).params
    options = [p for p in params if isinstance(p, click.Option)]
    assert options
    for option in options:
        flag = option.opts[0]
        assert flag in found, flag
        entry = found[flag]
        assert len(entry.split()) > 2, f"{flag} has no help text: {entry!r}"
        if option.name in settings:
            default = settings[option.name]
            if isinstance(default, bool):
                assert default is False and option.is_flag, flag  # the flag turns it on
            expected = shown_default(default)
            if expected is not None:
                assert f"[default: {expected}" in entry, (flag, entry)


def test_harvest_help_groups_the_flags_by_mode_with_examples() -> None:
    text = help_of("harvest")
    headings = [line for line in text.splitlines() if line and not line.startswith(" ")]
    for group in ("Output", "Site", "Repository", "Crawl", "Scale-out"):
        assert any(h.startswith(group) for h in headings), (group, headings)
    assert "--delay-factor FLOAT A host rests" in " ".join(text.split())
    assert "Examples:" in text and "harvester harvest https://" in text


def test_a_score_typo_is_a_usage_error_naming_the_flag_and_its_choices(tmp_path: Path) -> None:
    done = subprocess.run(
        [HARVESTER, "harvest", "http://127.0.0.1:9/", "--out", str(tmp_path / "c"), *SCORE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == ExitCode.USAGE
    (line,) = done.stderr.splitlines()
    assert line.startswith("harvester: ") and "--score" in line, line
    assert all(choice in line for choice in ("backlinks", "quality", "opic")), line
    assert not (tmp_path / "c").exists()


def test_a_score_typo_in_the_environment_is_refused_too(tmp_path: Path) -> None:
    done = subprocess.run(
        [HARVESTER, "harvest", "http://127.0.0.1:9/", "--out", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HARVESTER_SCORE": "opics"},
    )
    assert done.returncode == ExitCode.USAGE
    (line,) = done.stderr.splitlines()
    assert "score must be one of backlinks, quality, opic, not 'opics'" in line, line


def test_every_option_of_every_command_has_help_text() -> None:
    bare = [
        f"{group.name} {name} {param.opts[0]}"
        for group in (cli, provider)
        for name, command in getattr(group, "commands", {}).items()
        for param in command.params
        if isinstance(param, click.Option) and not param.help
    ]
    assert not bare, bare
