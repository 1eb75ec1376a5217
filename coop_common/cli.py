"""Running a click command as ``main(argv) -> int``, for both ``harvester`` and ``oai-provider``."""

from __future__ import annotations

import click


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
