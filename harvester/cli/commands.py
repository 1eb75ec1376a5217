"""The ``harvester`` command: parse flags, build components, call them.

Every command ends in one of the codes of :mod:`coop_common.exitcode`. An error is one line on
stderr, ``harvester: <cause>``, never a traceback: a usage error (exit 2), a harvester error
(its class's ``exit_code``), or an I/O error naming its path (exit 1). :func:`run_click` maps
them, in one place for every command.
"""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from coop_common import __version__
from coop_common.cli import run_click
from coop_common.exitcode import ExitCode
from harvester.cli.flags import (
    HARVEST_EPILOG,
    HARVEST_OPTIONS,
    WATCH_EPILOG,
    WATCH_OPTIONS,
    F,
    GroupedCommand,
    with_options,
)
from harvester.exceptions import HarvestError


def _exit_codes() -> str:
    """The epilog of ``--help``; ``\\b`` keeps click from rewrapping it."""
    return "\b\nExit codes:\n" + "\n".join(f"  {c.value:<3} {c.meaning}" for c in ExitCode)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=_exit_codes())
@click.version_option(__version__, prog_name="harvester")
def cli() -> None:
    """Archive websites into WARC files, cooperatively over OAI-PMH."""


@cli.command(cls=GroupedCommand, epilog=HARVEST_EPILOG + _exit_codes())
@click.argument("site_url", metavar="URL")
@with_options(HARVEST_OPTIONS)
def harvest(site_url: str, config_file: Path | None, as_json: bool | None, **flags: Any) -> int:
    """Archive URL (a site, or an OAI-PMH endpoint) into WARC files with a DIDL record per
    resource; a repository whose identifiers are not URLs is ingested in records mode."""
    from harvester.run.assembly import build_harvest
    from harvester.run.progress import ProgressReporter
    from harvester.settings import load_settings

    try:
        settings = load_settings(config_file=config_file, site_url=site_url, json=as_json, **flags)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if settings.workers > 1:
        from harvester.run.workers import command_line, run_workers

        ctx = click.get_current_context()
        argv = ["harvest", *command_line(ctx.command, ctx.params)]
        return run_workers(argv, settings.workers, settings.worker or None)
    _log_to(settings.log_path, settings.quiet)
    # SIGTERM (a service manager's stop) ends the run as Ctrl-C does: cleanly, exit 130.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with ProgressReporter(quiet=settings.quiet) as progress:
            summary = build_harvest(settings, progress).run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    _print_summary(summary.as_dict(), settings.json)
    return summary.exit_code


_FOLDERS = click.Path(exists=True, file_okay=False, path_type=Path)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def _to(text: str, *, folder: bool = False) -> Callable[[F], F]:
    """The ``--to`` option of a command that writes a file (or, with ``folder``, a folder)."""
    kind = click.Path(file_okay=not folder, dir_okay=folder, path_type=Path)
    return click.option("--to", "target", type=kind, required=True, help=text)


@cli.command(cls=GroupedCommand, epilog=WATCH_EPILOG + _exit_codes())
@click.argument("urls", nargs=-1)
@with_options(WATCH_OPTIONS)
def watch(urls: tuple[str, ...], out: Path, sources: Path | None, **flags: Any) -> int:
    """Keep the collections of URLS (or --sources) current until stopped (SIGTERM, Ctrl-C)."""
    from harvester.cli.watch import run_watch

    _log_to(out / "watch.log", bool(flags["quiet"]))
    try:
        summary = run_watch(list(urls), out, sources, **flags)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if flags["as_json"]:
        click.echo(json.dumps(summary, sort_keys=True))
    else:
        click.echo("  ".join(f"{k}={v}" for k, v in summary.items()))
    return ExitCode.OK


@cli.command()
@click.argument("folders", nargs=-1, required=True, type=_FOLDERS)
@_to("The folder the XML files go into, laid out by URL as wget -x lays pages out.", folder=True)
@_JSON
def didl(folders: tuple[Path, ...], target: Path, as_json: bool) -> int:
    """Export every DIDL record of the collections FOLDERS... as standalone XML files."""
    from harvester.archive.export import export_didls

    _settle(folders)
    count = sum(export_didls(out / "warcs", target) for out in folders)
    _echo({"didl": count, "to": str(target)}, as_json, f"wrote {count} DIDL documents to {target}")
    return ExitCode.OK


@cli.command()
@click.argument("folders", nargs=-1, required=True, type=_FOLDERS)
@click.option("--state", "state_url", help="A job's shared state (postgresql://…, sqlite:///…).")
@_JSON
def status(folders: tuple[Path, ...], state_url: str | None, as_json: bool) -> int:
    """What the collections FOLDERS... hold, and how their last runs went."""
    from harvester.collection.status import render
    from harvester.collection.status import status as collection_status
    from harvester.stateurl import check_state_url

    if state_url is not None:
        check_state_url(state_url)
    _settle(folders)
    found = collection_status(folders, state_url)
    _echo(found, as_json, render(found))
    return ExitCode.OK


@cli.command()
@click.argument("folders", nargs=-1, required=True, type=_FOLDERS)
@click.option("--quiet", is_flag=True, help="No progress bar or log lines.")
@_JSON
def verify(folders: tuple[Path, ...], quiet: bool, as_json: bool) -> int:
    """Check that the collections FOLDERS... are intact: WARC digests, CDXJ lines, the state.

    Exits 1 naming each damaged file and record offset."""
    from harvester.collection.verify import total_bytes
    from harvester.collection.verify import verify as check
    from harvester.run.progress import ByteProgress

    _log_to(None, quiet)
    _settle(folders)
    with ByteProgress("verify", total_bytes(folders), quiet=quiet) as progress:
        found = check(folders, progress)
    lines = [str(d) for d in found.damage]
    counts = f"{found.warcs} WARC files, {found.records} records, {found.index_lines} index lines"
    counts += f", {found.captures} captures"
    _echo(
        found.as_dict(),
        as_json,
        "\n".join([*lines, ("ok: " if found.ok else "DAMAGED: ") + counts]),
    )
    return ExitCode.OK if found.ok else ExitCode.FAILED


@cli.command()
@click.argument("site_url")
@click.option("--oai", help="The OAI-PMH endpoint (default: probe SITE_URL/oai, /modoai).")
@click.option("--set", "set_spec", help="Only this setSpec.")
@click.option("--deleted", is_flag=True, help="List deleted URLs too, marked.")
@_JSON
def urls(site_url: str, oai: str | None, set_spec: str | None, deleted: bool, as_json: bool) -> int:
    """List every URL of SITE_URL as its provider lists it, archiving nothing. A records
    repository's identifiers (oai:..., hdl:...), which are not URLs, are listed as such."""
    from harvester.collection.urls import find_source, is_url

    _check_site_url(site_url)
    source = find_source(site_url, oai, set_spec)
    count = others = 0
    for item in source.urls():
        if item.deleted and not deleted:
            continue
        url = is_url(item.identifier)
        count += url and not item.deleted
        others += not url and not item.deleted
        if as_json:
            line = {"url": item.identifier if url else None, "identifier": item.identifier}
            when = {"datestamp": item.datestamp, "deleted": item.deleted}
            click.echo(json.dumps({**line, **when, "sets": list(item.set_specs)}))
        else:
            click.echo(("deleted " if item.deleted else "") + item.identifier)
    if not as_json:
        click.echo(_listed_line(count, others, source.name), err=True)
    return ExitCode.OK


def _listed_line(urls: int, others: int, source: str) -> str:
    """What ``urls`` printed, on stderr: URLs, and identifiers that are not URLs."""
    if not others:
        return f"{urls} URLs from {source}"
    what = f"{others} identifiers that are not URLs (a records repository"
    what += "; `harvester harvest` ingests its records)"
    return f"{urls} URLs and {what} from {source}" if urls else f"{what} from {source}"


@cli.command()
@click.argument("folders", nargs=-1, required=True, type=_FOLDERS)
@_to("The HTML file to write.")
@_JSON
def report(folders: tuple[Path, ...], target: Path, as_json: bool) -> int:
    """Write a self-contained HTML report, with plots, of the collections FOLDERS..."""
    from harvester.collection.report import write_report

    _check_target(target)
    _settle(folders)
    found = write_report(folders, target)
    _echo(found, as_json, f"wrote {target}: " + " ".join(f"{k}={v}" for k, v in found.items()))
    return ExitCode.OK


@cli.command()
@click.argument("folder", type=_FOLDERS)
@_to("The WACZ file to write.")
@click.option("--quiet", is_flag=True, help="No progress bar or log lines.")
@_JSON
def wacz(folder: Path, target: Path, quiet: bool, as_json: bool) -> int:
    """Package the collection FOLDER as a WACZ 1.1.1 file for ReplayWeb.page and pywb."""
    from harvester.collection.verify import total_bytes
    from harvester.collection.wacz import write_wacz
    from harvester.run.progress import ByteProgress

    _check_target(target)
    _log_to(None, quiet)
    _settle((folder,))
    with ByteProgress("wacz", total_bytes([folder]), quiet=quiet) as progress:
        found = write_wacz(folder, target, progress)
    _echo(
        found,
        as_json,
        f"wrote {target}: " + " ".join(f"{k}={v}" for k, v in found.items() if k != "wacz"),
    )
    return ExitCode.OK


def _check_target(target: Path) -> None:
    """A file to write goes into a folder that exists: a typo is refused, not made."""
    if not target.parent.is_dir():
        raise click.UsageError(f"--to {target}: no folder {target.parent}")


def _settle(folders: tuple[Path, ...]) -> None:
    """Finish what an interrupted harvest left in FOLDERS, or refuse
    (harvester.collection.interruption)."""
    from harvester.collection.interruption import settle

    for folder in folders:
        settle(folder)


def _check_site_url(url: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise click.UsageError(f"SITE_URL must be an http:// or https:// URL, not {url!r}")


def _echo(data: Any, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, sort_keys=True) if as_json else text)


@cli.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-out"),
    show_default=True,
    help="The folder of the sample site, its index, the collection and its DIDL export.",
)
@_JSON
def demo(out: Path, as_json: bool) -> int:
    """Run the main job end to end against a sample site on a local provider."""
    from harvester.cli.demo import run_demo

    _log_to(None, quiet=True)
    return run_demo(out, as_json)


_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# On a terminal a progress bar may hold the last line (drawn by rich from this process, while
# the crawl's archiving process logs too): a record first returns to the line's start and
# erases it, so it takes the bar's place, and the bar is drawn again below it.
_TERMINAL_LINE = "\r\x1b[2K"


def _log_to(path: Path | None, quiet: bool) -> None:
    console = logging.StreamHandler()
    console.setLevel(logging.WARNING if quiet else logging.INFO)
    if console.stream.isatty():
        console.setFormatter(logging.Formatter(_TERMINAL_LINE + _LOG_FORMAT))
    handlers: list[logging.Handler] = [console]
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True, format=_LOG_FORMAT)


def _print_summary(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(summary, sort_keys=True))
        return
    keys: tuple[str, ...] = ("listed", "fetched", "unchanged", "deleted", "failed", "gone")
    keys += ("abandoned",)
    keys += ("bytes", "seconds", "coverage")
    if summary.get("records") or summary.get("mode") == "records":
        keys = ("records", "unchanged_records", "deleted", "broken", "lists_failed")
        keys += ("fetched", "unchanged", "failed", "seconds")  # fetched...: linked resources
    elif summary.get("endpoint") is None:  # a crawl: what it refused and how the seen-test did
        keys = (*keys[1:], "refused", "seen_hit_rate")
    click.echo("  ".join(f"{k}={summary[k]}" for k in keys))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    return run_click(cli, argv, "harvester", errors=(HarvestError,))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
