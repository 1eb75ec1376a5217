"""The one settings loader behind both commands: defaults < TOML < environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from coop_common.settings import SettingsError
from harvester.settings import load_settings as harvester_settings
from server_module.settings import load_settings as provider_settings


def test_the_layers_override_in_order(tmp_path: Path) -> None:
    config = tmp_path / "h.toml"
    config.write_text('concurrency = 3\nper_host = 2\ndelay = 0.5\nseeds = ["http://a/"]\n')
    env = {"HARVESTER_PER_HOST": "5", "HARVESTER_DELAY": "1.5"}
    settings = harvester_settings(
        config_file=config, environ=env, site_url="http://s/", out=tmp_path, delay=2.0
    )
    assert (settings.concurrency, settings.per_host, settings.delay) == (3, 5, 2.0)
    assert settings.seeds == ("http://a/",)
    assert settings.out == tmp_path


@pytest.mark.parametrize(
    ("text", "expected"), [("1", True), ("yes", True), ("ON", True), ("0", False), ("off", False)]
)
def test_both_commands_read_booleans_alike(tmp_path: Path, text: str, expected: bool) -> None:
    harvester = harvester_settings(
        environ={"HARVESTER_DURABLE": text}, site_url="http://s/", out=tmp_path
    )
    provider = provider_settings(
        environ={"OAI_PROVIDER_READ_AHEAD": text}, docroot=tmp_path, base_url="http://s"
    )
    assert harvester.durable is expected
    assert provider.read_ahead is expected


def test_a_word_that_is_no_boolean_is_an_error_not_false(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"HARVESTER_DURABLE.*not a boolean"):
        harvester_settings(environ={"HARVESTER_DURABLE": "ja"}, site_url="http://s/", out=tmp_path)


def test_both_commands_read_empty_and_listed_tuples_alike(tmp_path: Path) -> None:
    harvester = harvester_settings(
        environ={"HARVESTER_SEEDS": "", "HARVESTER_SETS": "a, b,"},
        site_url="http://s/",
        out=tmp_path,
    )
    provider = provider_settings(
        environ={"OAI_PROVIDER_EXCLUDE": "*.bak, tmp"}, docroot=tmp_path, base_url="http://s"
    )
    assert (harvester.seeds, harvester.sets) == ((), ("a", "b"))
    assert provider.exclude == ("*.bak", "tmp")


def test_an_empty_optional_is_none_and_a_bad_number_names_its_variable(tmp_path: Path) -> None:
    settings = harvester_settings(
        environ={"HARVESTER_MAX_PAGES": ""}, site_url="http://s/", out=tmp_path
    )
    assert settings.max_pages is None
    with pytest.raises(SettingsError, match="OAI_PROVIDER_PAGE_SIZE: 'many'"):
        provider_settings(
            environ={"OAI_PROVIDER_PAGE_SIZE": "many"}, docroot=tmp_path, base_url="http://s"
        )


def test_an_unknown_key_in_the_file_is_named(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    config.write_text("page_size = 10\npagesize = 20\n")
    with pytest.raises(SettingsError, match=r"p\.toml: unknown setting\(s\) pagesize"):
        provider_settings(config_file=config, docroot=tmp_path, base_url="http://s")


def test_a_broken_file_is_named(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    config.write_text("page_size = [\n")
    with pytest.raises(SettingsError, match=r"p\.toml is not valid TOML"):
        provider_settings(config_file=config, docroot=tmp_path, base_url="http://s")


def test_a_missing_required_setting_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"missing required setting.*base_url"):
        provider_settings(environ={}, docroot=tmp_path)
