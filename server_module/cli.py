"""The ``oai-provider`` command: ``serve`` runs the provider under gunicorn, ``index`` refreshes
the file index once, ``resourcesync`` writes the ResourceSync documents as static files.
Commands only parse flags, build components and call them."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import click

from coop_common import __version__
from coop_common.cli import run_click
from coop_common.settings import SettingsError
from server_module.exceptions import IndexSchemaError, StartupError
from server_module.settings import ProviderSettings, load_settings

DEFAULTS = ProviderSettings(docroot=Path("."))
REBASE = click.option(
    "--rebase",
    is_flag=True,
    default=None,
    help="Accept a base URL other than the index's: every item gets a new identifier and "
    "each old one becomes a deleted record.",
)
INDEX = click.option(
    "--index", "index_path", type=click.Path(path_type=Path), help="SQLite index file."
)
CONFIG = click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, path_type=Path),
    help="A TOML file of settings (docs/provider.md); flags and OAI_PROVIDER_* override it.",
)
ALLOW_OUTSIDE = click.option(
    "--allow-outside",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Publish files that symlinks in the root reach in this folder outside it (repeatable).",
)

PLUGINS = click.option(
    "--plugins/--no-plugins",
    default=None,
    help="Run the plugins (format identification, embedded metadata) on new and changed"
    " files.  [default: on]",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="oai-provider")
def cli() -> None:
    """Serve a website's files as an OAI-PMH 2.0 repository."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


@cli.command()
@click.argument("docroot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--base-url",
    help="The site's public URL; identifiers are this plus each path.  [default: http://HOST:PORT]",
)
@REBASE
@click.option("--host", help=f"Address to listen on.  [default: {DEFAULTS.host}]")
@click.option("--port", type=int, help=f"Port to listen on.  [default: {DEFAULTS.port}]")
@click.option("--endpoint", help=f"Path of the OAI-PMH endpoint.  [default: {DEFAULTS.endpoint}]")
@INDEX
@click.option("--admin-email", help="Identify's adminEmail.  [default: webmaster@<host>]")
@click.option("--repository-name", help="Identify's repositoryName.  [default: <host>]")
@click.option(
    "--page-size", type=int, help=f"Headers a list page.  [default: {DEFAULTS.page_size}]"
)
@click.option(
    "--refresh-interval",
    type=float,
    help=f"Seconds between index refreshes.  [default: {DEFAULTS.refresh_interval:g}]",
)
@click.option(
    "--watch/--no-watch",
    default=None,
    help="Refresh within seconds of a change under DOCROOT (inotify).  [default: on]",
)
@click.option(
    "--read-ahead/--no-read-ahead",
    default=None,
    help="Make the next list page while the harvester parses this one.  [default: on]",
)
@click.option(
    "--resourcesync/--no-resourcesync",
    default=None,
    help="Also publish the site as a ResourceSync source.  [default: on]",
)
@ALLOW_OUTSIDE
@PLUGINS
@CONFIG
@click.option("--workers", type=int, help=f"Worker processes.  [default: {DEFAULTS.workers}]")
@click.option("--threads", type=int, help=f"Threads a worker.  [default: {DEFAULTS.threads}]")
def serve(docroot: Path, **flags: Any) -> int:
    """Serve DOCROOT's files and its OAI-PMH endpoint under gunicorn."""
    from server_module.wsgiserver import serve_forever

    return serve_forever(_settings(docroot, flags, serving=True))


@cli.command()
@click.argument("docroot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base-url", help="The site's public URL (required here or in the settings).")
@REBASE
@INDEX
@ALLOW_OUTSIDE
@PLUGINS
@CONFIG
def index(docroot: Path, **flags: Any) -> int:
    """Refresh DOCROOT's index once; print what changed and the symlinks out of the root it
    did not follow. Refused while a provider serves the index (it refreshes it itself)."""
    from server_module.app import file_index
    from server_module.index.fileindex import default_index_path
    from server_module.index.lock import IndexLock
    from server_module.index.scan import outside_report
    from server_module.preflight import check_index_folder

    settings = _settings(docroot, flags)
    path = settings.index_path or default_index_path(docroot)
    check_index_folder(path)
    with IndexLock(path), file_index(settings) as idx:
        stats = idx.refresh(analyse="none")
        if stats is None:  # a blocking refresh always runs
            raise StartupError(f"{idx.path}: the index was not refreshed")
        click.echo(f"{idx.path}: {stats.sentence()}; committed")
        if report := outside_report(idx.outside):
            click.echo(report)
        if idx.plugins:
            started = time.monotonic()
            made = idx.analyse()
            click.echo(f"plugins: {made} results in {time.monotonic() - started:.2f} s")
    return 0


def _settings(docroot: Path, flags: dict[str, Any], *, serving: bool = False) -> ProviderSettings:
    """The layered settings; a value the settings refuse is a usage error (exit 2)."""
    flags["allow_outside"] = flags.get("allow_outside") or None  # none given: file's or env's
    try:
        return load_settings(docroot=docroot, serving=serving, **flags)
    except SettingsError as exc:
        raise click.UsageError(str(exc)) from None


@cli.command()
@click.argument("docroot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base-url", help="The site's public URL (required here or in the settings).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the web server serves the base URL's root.  [default: DOCROOT]",
)
@click.option(
    "--state",
    type=click.Path(file_okay=False, path_type=Path),
    help="The run's own index and ledger.  [default: .<root>.resourcesync/ beside DOCROOT]",
)
@ALLOW_OUTSIDE
@CONFIG
def resourcesync(
    docroot: Path,
    out: Path | None,
    state: Path | None,
    allow_outside: tuple[Path, ...],
    **flags: Any,
) -> int:
    """Write DOCROOT's ResourceSync documents as static files; each later run adds a Change
    List of what changed since the run before."""
    from server_module.resourcesync.static import publish_static

    settings = _settings(docroot, {**flags, "allow_outside": allow_outside})
    run = publish_static(
        docroot,
        settings.base_url,
        out=out,
        state=state,
        exclude=settings.exclude,
        allow_outside=settings.allow_outside,
    )
    click.echo(f"{run.changes} changes; {len(run.written)} documents under {out or docroot}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    return run_click(
        cli, argv, "oai-provider", errors=(StartupError, IndexSchemaError, SettingsError)
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
