"""The ``oai-provider`` command: ``serve`` runs the provider under gunicorn, ``index`` refreshes
the file index once, ``resourcesync`` writes the ResourceSync documents as static files.
Commands only parse flags, build components and call them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from coop_common import __version__
from coop_common.cli import run_click
from coop_common.settings import SettingsError

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
@click.option("--base-url", help="The site's public URL; identifiers are this plus each path.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--endpoint", help="Path of the OAI-PMH endpoint.  [default: /oai]")
@click.option("--index", "index_path", type=click.Path(path_type=Path), help="SQLite index file.")
@click.option("--admin-email")
@click.option("--repository-name")
@click.option("--page-size", type=int)
@click.option("--refresh-interval", type=float, help="Seconds between index refreshes.")
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
@click.option("--config", "config_file", type=click.Path(exists=True, path_type=Path))
@click.option("--workers", default=2, show_default=True, type=int)
@click.option("--threads", default=4, show_default=True, type=int)
def serve(docroot: Path, host: str, port: int, workers: int, threads: int, **flags: Any) -> int:
    """Serve DOCROOT's files and its OAI-PMH endpoint under gunicorn."""
    from server_module.wsgiserver import serve_forever

    flags["base_url"] = flags["base_url"] or f"http://{host}:{port}"
    flags["allow_outside"] = flags["allow_outside"] or None  # none given: the file's or env's
    return serve_forever(docroot, host=host, port=port, workers=workers, threads=threads, **flags)


@cli.command()
@click.argument("docroot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base-url", required=True, help="The site's public URL.")
@click.option("--index", "index_path", type=click.Path(path_type=Path), help="SQLite index file.")
@ALLOW_OUTSIDE
@PLUGINS
@click.option("--config", "config_file", type=click.Path(exists=True, path_type=Path))
def index(docroot: Path, allow_outside: tuple[Path, ...], **flags: Any) -> int:
    """Refresh DOCROOT's index once; print what changed and the symlinks out of the root it
    did not follow."""
    from server_module.app import file_index
    from server_module.scan import outside_report
    from server_module.settings import load_settings

    settings = load_settings(docroot=docroot, allow_outside=allow_outside or None, **flags)
    with file_index(settings) as idx:
        stats = idx.refresh()
    click.echo(f"{idx.path}: {stats}")
    if report := outside_report(idx.outside):
        click.echo(report)
    return 0


@cli.command()
@click.argument("docroot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base-url", required=True, help="The site's public URL.")
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
@click.option("--config", "config_file", type=click.Path(exists=True, path_type=Path))
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
    from server_module.settings import load_settings

    settings = load_settings(docroot=docroot, allow_outside=allow_outside or None, **flags)
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
    return run_click(cli, argv, "oai-provider", errors=(SettingsError,))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
