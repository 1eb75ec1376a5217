"""The HTTP clients' limits come from the settings layers (TOML, environment) to the wire."""

from __future__ import annotations

import sys
from pathlib import Path

from harvester.http.limits import fetch_settings, oai_limits
from harvester.run.assembly import build_harvest
from harvester.settings import load_settings
from server_module.settings import load_settings as provider_settings
from tests.servers import start_command
from tests.sites import make_site

AGENT = "probe-bot/3.1 (+http://127.0.0.1/bot)"


def test_toml_and_environment_reach_the_fetcher_and_the_oai_client(tmp_path: Path) -> None:
    config = tmp_path / "harvest.toml"
    config.write_text("max_retries = 7\nfetch_deadline = 31.5\noai_timeout = 4.5\n")
    env = {
        "HARVESTER_USER_AGENT": AGENT,
        "HARVESTER_OAI_MAX_RETRIES": "2",
        "HARVESTER_ROBOTS_TTL": "60",
        "HARVESTER_COMMIT_EVERY": "17",
    }
    settings = load_settings(config_file=config, environ=env, site_url="http://s/", out=tmp_path)
    fetch, oai = fetch_settings(settings), oai_limits(settings)
    assert (fetch.retries, fetch.deadline, fetch.robots_ttl) == (7, 31.5, 60.0)
    assert (oai.timeout, oai.max_retries) == (4.5, 2)
    assert fetch.user_agent == oai.user_agent == AGENT
    assert fetch.robots_token == "probe-bot"
    assert settings.commit_every == 17


def test_the_provider_reads_its_access_log_from_the_environment(tmp_path: Path) -> None:
    log = str(tmp_path / "access.log")
    settings = provider_settings(
        environ={"OAI_PROVIDER_ACCESS_LOG": log}, docroot=tmp_path, base_url="http://s"
    )
    assert settings.access_log == log


def test_the_configured_user_agent_is_what_the_provider_logs(tmp_path: Path) -> None:
    """A real harvest of ``oai-provider serve``, whose access log is set in its TOML file:
    every OAI-PMH request and every file fetched carry the agent from the environment."""
    site = make_site(tmp_path / "www", pages=12, seed=4)
    access_log = tmp_path / "access.log"
    provider_config = tmp_path / "provider.toml"
    provider_config.write_text(f"access_log = {str(access_log)!r}\nrefresh_interval = 0\n")
    argv = [sys.executable, "-m", "server_module.cli", "serve", str(site.root), "--port"]
    argv += ["{port}", "--index", str(tmp_path / "idx.sqlite"), "--workers", "1"]
    argv += ["--config", str(provider_config)]
    with start_command(argv, ready_path="/oai?verb=Identify") as server:
        settings = load_settings(
            environ={"HARVESTER_USER_AGENT": AGENT},
            site_url=server.url,
            out=tmp_path / "out",
            quiet=True,
        )
        summary = build_harvest(settings).run()
    assert summary.failed == 0 and summary.fetched == len(site.public)
    lines = access_log.read_text().splitlines()
    ours = [line for line in lines if line.endswith(f'"{AGENT}"')]
    assert any('"GET /oai?verb=ListIdentifiers' in line for line in ours)
    files = [line for line in ours if '"GET /oai?' not in line and "/robots.txt" not in line]
    assert len(files) == summary.fetched + 1  # and the seed, the site's root
    assert any('"GET / HTTP/1.1"' in line for line in files) and summary.seed == "fetched"
    strangers = [line for line in lines if line not in ours]
    assert all('"GET /oai?verb=Identify HTTP/1.1"' in line for line in strangers), strangers
