"""The ``oai-provider`` command: parse flags, build the app or the index, run it."""

from __future__ import annotations

import click

from harvester.cli import run_click
from server_module import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="oai-provider")
def cli() -> None:
    """Serve a website's files as an OAI-PMH 2.0 repository."""


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    return run_click(cli, argv, "oai-provider")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
