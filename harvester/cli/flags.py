"""The flags of ``harvester harvest`` and ``watch``: grouped by mode in ``--help``, each showing
the default its setting really has.

A :class:`SettingOption` names the settings field it sets; its help ends with that field's
default, read from the dataclass when the help is drawn (never retyped here). Its value stays
``None`` when not given, so a flag overrides the lower layers (file, environment) only when
given. A :class:`GroupedCommand` draws its options in one section per ``group``.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

HARVEST = "harvester.settings:HarvestSettings"
BOUNDS = "harvester.recrawl.bounds:Bounds"

OUTPUT = "Output"
FETCHING = "Fetching (every mode)"
SITE = "Site (an OAI-PMH provider or a ResourceSync source)"
REPOSITORY = "Repository (records mode)"
CRAWL = "Crawl (no provider, or --mode crawl)"
SCALE_OUT = "Scale-out (many workers, one job on PostgreSQL)"


def setting_default(source: str, name: str) -> Any:
    """The default of field ``name`` of the dataclass ``module:Class`` in ``source``."""
    module, _, cls = source.partition(":")
    for field in dataclasses.fields(getattr(importlib.import_module(module), cls)):
        if field.name == name:
            return field.default
    raise LookupError(f"{source} has no field {name}")


class GroupedOption(click.Option):
    """An option in a ``group`` of its command's help."""

    def __init__(self, *args: Any, group: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = group


class SettingOption(GroupedOption):
    """An option that sets a settings field; its help ends with the field's default (``note``
    explains it, or stands for it when the default is empty)."""

    def __init__(self, *args: Any, source: str = HARVEST, note: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source = source
        self.note = note

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None:
            return None
        names, text = record
        default = setting_default(self.source, self.name or "")
        if isinstance(default, bool) or default in (None, (), ""):
            suffix = f"[default: {self.note}]" if self.note else ""
        else:
            suffix = f"[default: {default}{', ' + self.note if self.note else ''}]"
        return names, f"{text}  {suffix}".strip()


class GroupedCommand(click.Command):
    """A command whose ``--help`` lists its options in one section per group."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):
                continue
            record = param.get_help_record(ctx)
            if record is not None:
                sections.setdefault(getattr(param, "group", "Other options"), []).append(record)
        sections["Other options"] = sections.pop("Other options", [])
        for name, records in sections.items():
            with formatter.section(name):
                formatter.write_dl(records)


def option(*names: str, group: str, **kwargs: Any) -> Callable[[F], F]:
    """A :class:`SettingOption` whose value is ``None`` unless given."""
    kwargs.setdefault("default", None)
    return click.option(*names, cls=SettingOption, group=group, **kwargs)


def plain(*names: str, group: str, **kwargs: Any) -> Callable[[F], F]:
    """An option of a group that sets no settings field (its default, if any, is shown)."""
    return click.option(*names, cls=GroupedOption, group=group, **kwargs)


_FOLDER = click.Path(file_okay=False, path_type=Path)

HARVEST_OPTIONS: list[Callable[[F], F]] = [
    plain("--out", type=_FOLDER, required=True, group=OUTPUT,
          help="The collection folder; rerunning on it harvests incrementally."),
    option("--durable", is_flag=True, group=OUTPUT,
           help="fsync every WARC group (power-loss safety, about 4 ms a resource)."),
    plain("--config", "config_file", type=click.Path(exists=True, path_type=Path),
          group=OUTPUT, help="A TOML file of settings (field names as the flags')."),
    option("--quiet", is_flag=True, group=OUTPUT, help="Warnings only, no progress bar."),
    plain("--json", "as_json", is_flag=True, default=None, group=OUTPUT,
          help="Print the summary as JSON."),
    option("--concurrency", type=int, group=FETCHING, help="Simultaneous fetches."),
    option("--per-host", type=int, group=FETCHING, help="Connections per host."),
    option("--delay", type=float, group=FETCHING, help="Seconds between requests to one host."),
    option("--max-time", type=float, group=FETCHING, note="none",
           help="Stop after this many seconds (the next run resumes)."),
    option("--max-size", type=int, group=FETCHING,
           help="Truncate resources larger than this many bytes (WARC-Truncated)."),
    option("--user-agent", group=FETCHING, help="The User-Agent header of every request."),
    option("--ignore-robots", is_flag=True, group=FETCHING, help="Do not obey robots.txt."),
    option("--mode", type=click.Choice(["auto", "oai", "records", "resourcesync", "crawl"]),
           group=SITE, help="auto: OAI-PMH (records when its identifiers are not URLs), else"
           " ResourceSync, else crawl."),
    option("--oai", group=SITE, note="probe URL itself, then URL/oai, URL/modoai",
           help="The OAI-PMH endpoint."),
    option("--set", "sets", multiple=True, group=SITE,
           help="Harvest only this setSpec (repeatable).", note="every set"),
    option("--oai-strategy", type=click.Choice(["get", "didl"]), group=SITE,
           help="get: one GET per file; didl: files by value from oai_didl list pages."),
    option("--identify", type=click.Choice(["auto", "off", "magic", "pronom"]), group=SITE,
           help="Identify each payload's format in its DIDL record: libmagic (magic), also"
           " the PRONOM PUID through fido (pronom: 5-80 ms a resource); auto: magic where no"
           " provider describes the files (crawl, ResourceSync, records)."),
    option("--fetch-processes", type=int, group=SITE,
           note="one a core (up to 4) from 2,000 resources or 32 MiB due on",
           help="Processes fetching a listed site, sharing the connections."),
    option("--metadata-prefix", "metadata_prefixes", multiple=True, group=REPOSITORY,
           note="oai_dc", help="List in this format (repeatable; all = every one)."),
    option("--from", "from_date", group=REPOSITORY, note="each list's last responseDate",
           help="List from this datestamp (YYYY-MM-DD[Thh:mm:ssZ])."),
    option("--until", "until_date", group=REPOSITORY, note="none",
           help="List until this datestamp; a run with it moves no list's bound."),
    option("--linked", type=click.Choice(["none", "landing", "files"]), group=REPOSITORY,
           help="Which linked resources to fetch."),
    option("--linked-scope", multiple=True, group=REPOSITORY, note="the repository's domain",
           help="Another domain for linked resources (repeatable; * = any)."),
    option("--seed", "seeds", multiple=True, group=CRAWL, note="URL alone",
           help="Another start URL (repeatable)."),
    option("--include", multiple=True, group=CRAWL, note="every URL in scope",
           help="Only URLs matching this regex (repeatable)."),
    option("--exclude", multiple=True, group=CRAWL, note="none",
           help="Never URLs matching this regex (repeatable)."),
    option("--max-depth", type=int, group=CRAWL, help="Links from a seed, at most."),
    option("--max-pages", type=int, group=CRAWL, note="no limit",
           help="Fetch at most this many pages (the next run resumes)."),
    option("--max-bytes", type=int, group=CRAWL, note="no limit",
           help="Stop after this many bytes (the next run resumes)."),
    option("--delay-factor", type=float, group=CRAWL,
           help="A host rests at least K times its last response time."),
    option("--crawl-per-host", type=int, group=CRAWL, note="0: 2, or --browser-tabs when given",
           help="Pages of one host fetched at once."),
    option("--crawl-processes", type=click.IntRange(0, 2), group=CRAWL,
           note="2 on two cores or more", help="2: pages are archived in a second process;"
           " 1: in the crawling one."),
    option("--schedule", type=click.Choice(["bfs", "performance", "quality", "capability"]),
           group=CRAWL, help="The order in which hosts and URLs are fetched."),
    option("--score", type=click.Choice(["backlinks", "quality", "opic"]), group=CRAWL,
           help="The URL score the frontier orders by."),
    option("--policy", type=click.Path(exists=True, path_type=Path), group=CRAWL,
           note="none", help="A TOML file of crawl policies (favor, default, distrust)."),
    option("--respect-nofollow", is_flag=True, group=CRAWL,
           help="Do not follow rel=nofollow links."),
    option("--seen-cache", type=int, group=CRAWL, help="Entries of the seen-URL cache."),
    option("--browser", is_flag=True, group=CRAWL,
           help="Load each page in headless Chromium and archive all it loads."),
    option("--browser-tabs", type=int, group=CRAWL, note="0: a tab a core, 2 to 8",
           help="With --browser: pages loaded at once."),
    option("--state", group=SCALE_OUT, note="sqlite:///OUT/state.sqlite",
           help="The state's URL (sqlite:///PATH, postgresql://USER@HOST/DB)."),
    option("--workers", type=int, group=SCALE_OUT,
           help="Worker processes of this job to start here (postgresql:// only)."),
    option("--worker", group=SCALE_OUT, note="HOSTNAME-PID on postgresql://",
           help="This worker's id, in its file names."),
    option("--lease", type=float, group=SCALE_OUT,
           help="Seconds a dead worker's hosts stay its."),
]  # fmt: skip

SOURCES = "Sources"
BUDGET = "Budget and revisits"

WATCH_OPTIONS: list[Callable[[F], F]] = [
    plain("--out", type=_FOLDER, required=True, group=OUTPUT,
          help="One collection per source under this folder."),
    option("--state", group=OUTPUT, note="sqlite:///OUT/SOURCE/state.sqlite",
           help="The state's URL (sqlite:///PATH, postgresql://USER@HOST/DB)."),
    option("--quiet", is_flag=True, group=OUTPUT, help="Warnings only."),
    plain("--json", "as_json", is_flag=True, group=OUTPUT, help="Print the summary as JSON."),
    plain("--sources", type=click.Path(exists=True, dir_okay=False, path_type=Path),
          group=SOURCES, help="A TOML file of [[source]] tables (url, mode, out, weight,"
          " intervals)."),
    plain("--mode", type=click.Choice(["auto", "oai", "crawl"]), default="auto",
          show_default=True, group=SOURCES,
          help="How each URL is watched: auto: an incremental OAI-PMH harvest where a"
          " provider answers, else a crawl's revisits."),
    plain("--rate", type=float, default=1.0, show_default=True, group=BUDGET,
          help="Requests per second over the whole watch."),
    plain("--max-time", type=float, group=BUDGET,
          help="Stop after this many seconds.  [default: until stopped]"),
    plain("--revisit", type=click.Choice(["adaptive", "uniform"]), default="adaptive",
          show_default=True, group=BUDGET, help="adaptive: each page when it is most likely"
          " to have changed; uniform: every page at the same interval."),
    plain("--min-interval", type=float, group=BUDGET,
          help="Seconds between two fetches of one URL, at least.  [default: 1, or the"
          " round-robin cycle (URLs / --rate) when shorter]"),
    option("--max-interval", type=float, source=BOUNDS, group=BUDGET,
           help="Seconds between two fetches of one URL, at most."),
    option("--delay", type=float, group=BUDGET, help="Seconds between requests to one host."),
    option("--ignore-robots", is_flag=True, group=BUDGET, help="Do not obey robots.txt."),
]  # fmt: skip

HARVEST_EPILOG = """\b
Examples:
  harvester harvest https://www.example.org --out collection/
  harvester harvest https://repo.example.org/oai --out repo/ --metadata-prefix all
  harvester harvest https://example.org/ --mode crawl --out coll/ --max-pages 10000
  harvester harvest https://example.org/ --mode crawl --out /data/coll \\
      --state postgresql://archiver@db.example/archive --workers 4

"""

WATCH_EPILOG = """\b
Examples:
  harvester watch https://a.example.org https://b.example.org --out watched/ --rate 2
  harvester watch --sources sources.toml --out watched/ --rate 0.5 --max-time 3600

"""


def with_options(options: list[Callable[[F], F]]) -> Callable[[F], F]:
    """Apply ``options`` to a command function, the first listed first in ``--help``."""

    def decorate(function: F) -> F:
        for decorator in reversed(options):
            function = decorator(function)
        return function

    return decorate
