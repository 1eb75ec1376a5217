"""The ``harvester`` command: parse flags, build components, call them."""

from __future__ import annotations

import click

from harvester import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harvester")
def cli() -> None:
    """Archive websites into WARC files, cooperatively over OAI-PMH."""


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    return run_click(cli, argv, "harvester")


def run_click(command: click.Command, argv: list[str] | None, prog_name: str) -> int:
    """Invoke a click command and turn its outcome into an exit code instead of exiting."""
    try:
        result = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted.", err=True)
        return 130
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
