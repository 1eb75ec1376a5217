"""The state's URL (``--state``, ``state`` in the TOML file, ``HARVESTER_STATE``): where the
state lives, the default beside the collection, and a clear usage error for a URL no
implementation supports; and the state's own rules, on both backends (the ``state_url``
fixture of ``tests/conftest.py``: SQLite, and PostgreSQL on a throwaway cluster)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from coop_common.exitcode import ExitCode
from harvester.exceptions import StateURLError
from harvester.settings import load_settings
from harvester.storage import open_state
from harvester.storage.protocol import ACTIVE, Due, ListedPage, ListKey, ListPosition
from tests.conftest import start_provider
from tests.sites import make_site
from tests.test_cli import one_line, run

SITE = "http://127.0.0.1:9/"


def test_the_state_defaults_to_the_collection_folder(tmp_path: Path) -> None:
    settings = load_settings(site_url=SITE, out=tmp_path / "c", environ={})
    assert settings.state_url == f"sqlite:///{tmp_path / 'c' / 'state.sqlite'}"


def test_the_state_url_layers_as_every_setting(tmp_path: Path) -> None:
    toml = tmp_path / "h.toml"
    toml.write_text('state = "sqlite:///from-file.sqlite"\n')
    env = {"HARVESTER_STATE": "sqlite:///from-env.sqlite"}

    def url(**flags: object) -> str:
        return load_settings(site_url=SITE, out=tmp_path, **flags).state_url  # type: ignore[arg-type]

    assert url(config_file=toml, environ={}) == "sqlite:///from-file.sqlite"
    assert url(config_file=toml, environ=env) == "sqlite:///from-env.sqlite"
    assert url(config_file=toml, environ=env, state="sqlite:///f.sqlite") == "sqlite:///f.sqlite"


@pytest.mark.parametrize(
    "url", ["postgres://db/archive", "postgresql://db-without-a-database/", "sqlite://relative"]
)
def test_an_unsupported_state_url_is_refused_naming_it(url: str) -> None:
    with pytest.raises(StateURLError, match="use sqlite:///PATH, postgresql://") as caught:
        open_state(url)
    assert url in str(caught.value) and caught.value.exit_code == ExitCode.USAGE
    with pytest.raises(ValueError, match=url):
        load_settings(site_url=SITE, out=Path("x"), environ={"HARVESTER_STATE": url})


def test_an_unknown_scheme_on_the_command_line_is_one_usage_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run("harvest", SITE, "--out", str(out), "--state", "mysql://db/archive")
    assert done.returncode == ExitCode.USAGE
    line = one_line(done.stderr)
    assert "mysql://db/archive" in line and "sqlite:///PATH" in line
    assert not out.exists()


def test_the_state_flag_puts_the_state_where_it_names(tmp_path: Path, state_url: str) -> None:
    site = make_site(tmp_path / "www", pages=6, seed=4)
    out = tmp_path / "out"
    with start_provider(site.root, tmp_path / "index.sqlite") as server:
        done = run("harvest", server.url, "--out", str(out), "--quiet", "--state", state_url)
        assert done.returncode == ExitCode.OK, done.stderr
        again = run("harvest", server.url, "--out", str(out), "--quiet", "--state", state_url)
        assert again.returncode == ExitCode.OK, again.stderr
    assert "fetched=0" in again.stdout  # the second run read the first one's state
    assert not (out / "state.sqlite").exists()
    with open_state(state_url) as opened:
        assert opened.counts(server.url) == {"archived": len(site.public)}


@pytest.mark.parametrize("attempts", [1, 2, 3])
def test_a_failed_resource_is_due_after_a_wait_that_doubles(state_url: str, attempts: int) -> None:
    """The protocol's ``Due`` rule, ``delay * 2 ** (attempts - 1)`` after the last failure,
    as the state's portable SQL computes it (no scalar MAX)."""
    delay = 100.0
    with open_state(state_url) as state:
        state.add_pending(SITE, [SITE + "a", SITE + "b"])
        before = time.time()
        for _ in range(attempts):
            state.mark_failed(SITE + "a", "HTTP 503")
        after = time.time()
        wait = delay * 2 ** (attempts - 1)

        def due_at(now: float) -> list[str]:
            return [r.url for r in state.resources(SITE, ACTIVE, due=Due(now, delay))]

        assert due_at(before + wait - 1) == [SITE + "b"]
        assert due_at(after + wait) == [SITE + "a", SITE + "b"]
        assert state.count(SITE, ACTIVE, due=Due(after + wait, delay)) == 2


@pytest.mark.parametrize(
    ("oldest", "bound"),
    [
        (None, "2024-05-01T00:00:00Z"),  # nothing waits: the list's own responseDate
        ("2024-04-01T00:00:00Z", "2024-04-01T00:00:00Z"),  # held back to what still waits
        ("2024-06-01T00:00:00Z", "2024-05-01T00:00:00Z"),  # never past the list's start
    ],
)
def test_a_listed_list_advances_to_its_start_held_back(
    state_url: str, oldest: str | None, bound: str
) -> None:
    key, idle = ListKey("http://p/oai", "text", "oai_dc"), ListKey("http://p/oai", None, "oai_dc")
    with open_state(state_url) as state:
        for k in (key, idle):
            state.lists.start(k, None)
        state.record_page(SITE, ListedPage(key, [], None, "2024-05-01T00:00:00Z"))
        state.lists.finish(key)
        state.lists.advance([key, idle], oldest)
        assert state.lists.position(key) == ListPosition(bound, None, None, None, "idle")
        assert state.lists.position(idle).harvested_until is None  # it was never listed


def test_enqueue_is_all_or_nothing_even_outside_a_transaction(state_url: str) -> None:
    """A queued URL is also a pending resource: a crawl killed inside ``enqueue`` (here the
    rows run out with an error after the first) leaves neither half behind."""
    from harvester.storage.protocol import QueuedRow

    def rows():  # type: ignore[no-untyped-def]
        yield QueuedRow("http://h/a", "h", 0, "default", 0, {}, 1, None)
        raise RuntimeError("killed")

    with open_state(state_url) as state:
        with pytest.raises(RuntimeError):
            state.enqueue("http://h/", rows())
        assert list(state.queued("http://h/")) == []
        assert state.get("http://h/a") is None
        added = state.enqueue("http://h/", [QueuedRow("http://h/b", "h", 0, "d", 0, {}, 2, None)])
        assert [r.url for r in added] == ["http://h/b"]
        assert state.get("http://h/b") is not None


def test_enqueue_inside_a_batch_keeps_the_steps_before_it_but_not_half_of_itself(
    state_url: str,
) -> None:
    from harvester.storage.protocol import QueuedRow

    def rows():  # type: ignore[no-untyped-def]
        yield QueuedRow("http://h/b", "h", 0, "default", 0, {}, 2, None)
        raise RuntimeError("killed")

    with open_state(state_url) as state:
        with pytest.raises(RuntimeError), state.batch():
            state.enqueue("http://h/", [QueuedRow("http://h/a", "h", 0, "d", 0, {}, 1, None)])
            state.enqueue("http://h/", rows())
        assert [r.url for r in state.queued("http://h/")] == ["http://h/a"]
        assert state.get("http://h/a") is not None and state.get("http://h/b") is None
