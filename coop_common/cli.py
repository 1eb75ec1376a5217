"""Running a click command as ``main(argv) -> int``, for both ``harvester`` and ``oai-provider``.

Every outcome is an exit code of :mod:`coop_common.exitcode`, and every error one line on
stderr, ``PROG: cause``: a usage error with a pointer to ``--help``, a disk error as
``PATH: cause`` (as coreutils word it), and the command's own errors (the ``errors`` given)
with the ``exit_code`` their class carries. Never a traceback.
"""

from __future__ import annotations

import click

from coop_common.exitcode import ExitCode


def run_click(
    command: click.Command,
    argv: list[str] | None,
    prog_name: str,
    errors: tuple[type[Exception], ...] = (),
) -> int:
    """Invoke a click command and turn its outcome into an exit code instead of exiting."""
    try:
        result = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else prog_name
        return _fail(prog_name, f"{exc.format_message()} (see '{where} --help')", ExitCode.USAGE)
    except click.ClickException as exc:
        return _fail(prog_name, exc.format_message(), exc.exit_code)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        return _fail(prog_name, "interrupted", ExitCode.INTERRUPTED)
    except errors as exc:
        return _fail(prog_name, str(exc), int(getattr(exc, "exit_code", ExitCode.FAILED)))
    except OSError as exc:  # the disk: a folder that cannot be made, a file not written
        return _fail(prog_name, os_error(exc), ExitCode.FAILED)
    return result if isinstance(result, int) else ExitCode.OK


def _fail(prog_name: str, message: str, code: int) -> int:
    click.echo(f"{prog_name}: {' '.join(message.split())}", err=True)
    return code


def os_error(exc: OSError) -> str:
    """``PATH: cause``, as coreutils word it.

    >>> os_error(NotADirectoryError(20, "Not a directory", "/etc/hosts/out"))
    '/etc/hosts/out: Not a directory'
    """
    if exc.filename is None:
        return str(exc)
    paths = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    return f"{paths}: {exc.strerror or exc}"
