"""A plugin as configured (a ``[[plugin]]`` table of the settings file) and as resolved.

A table names a custom command as mod_oai's ``modoai_plugin`` did::

    [[plugin]]
    label = "jhove"
    command = ["jhove", "-h", "xml", "%s"]     # an argument list; "%s" is the file's path
    version = ["jhove", "--version"]            # prints the tool's version
    mime = ["application/pdf", "image/*"]       # shell-style patterns (default: every type)
    timeout = 60                                # seconds (default: plugin_timeout)

A :class:`Plugin` is what the runner runs: one or more argument lists (a built-in may need
two runs of its tool), how many files one run may take (built-ins that accept many paths),
how to split a run's output per file, and how to read facts out of one file's output.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coop_common.settings import SettingsError

PATH = "%s"  # the argument replaced by the file's path (by the batch's paths, for built-ins)

# One run's output, split per file: None where a file's part could not be told apart.
Splitter = Callable[[bytes, int], list[bytes | None]]
FactReader = Callable[[bytes], dict[str, str]]


def one_file(output: bytes, count: int) -> list[bytes | None]:
    """A run of one file: its output is that file's."""
    return [output] if count == 1 else [None] * count


def no_facts(output: bytes) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class PluginSpec:
    """One ``[[plugin]]`` table, checked."""

    label: str
    command: tuple[str, ...]
    version: tuple[str, ...] = ()
    mime: tuple[str, ...] = ("*",)
    timeout: float | None = None

    @classmethod
    def from_table(cls, table: Any) -> PluginSpec:
        """A table of the settings file; :class:`SettingsError` naming what is wrong."""
        if not isinstance(table, Mapping):
            raise SettingsError("plugin: each [[plugin]] must be a table")
        label = table.get("label")
        if not isinstance(label, str) or not label.strip():
            raise SettingsError("plugin: a [[plugin]] table needs a label")
        unknown = set(table) - {"label", "command", "version", "mime", "timeout"}
        if unknown:
            raise SettingsError(f"plugin {label!r}: unknown key(s) {', '.join(sorted(unknown))}")
        command = _argv(label, "command", table.get("command"))
        if PATH not in command:
            raise SettingsError(f"plugin {label!r}: command needs a {PATH!r} argument")
        version = _argv(label, "version", table.get("version", [])) if "version" in table else ()
        mime = table.get("mime", ["*"])
        if isinstance(mime, str):
            mime = [mime]
        if not isinstance(mime, list) or not all(isinstance(m, str) for m in mime):
            raise SettingsError(f"plugin {label!r}: mime must be a list of patterns")
        timeout = table.get("timeout")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise SettingsError(f"plugin {label!r}: timeout must be a positive number")
        return cls(label.strip(), command, version, tuple(mime), timeout)


def _argv(label: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise SettingsError(
            f'plugin {label!r}: {key} must be an argument list, e.g. ["tool", "%s"]'
            " (no shell runs it)"
        )
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise SettingsError(f"plugin {label!r}: {key} must be a non-empty list of strings")
    return tuple(value)


@dataclass(frozen=True)
class Plugin:
    """A plugin ready to run: its tool's name and version are known."""

    label: str
    tool: str
    tool_version: str
    argvs: tuple[tuple[str, ...], ...]
    mime: tuple[str, ...] = ("*",)
    timeout: float = 30.0
    batch: int = 1
    split: Sequence[Splitter] = (one_file,)
    facts: FactReader = field(default=no_facts)

    def applies_to(self, mime: str) -> bool:
        """Whether a file of this MIME type is this plugin's.

        >>> p = Plugin("x", "x", "1", (("x", "%s"),), mime=("image/*", "application/pdf"))
        >>> p.applies_to("image/png"), p.applies_to("application/pdf"), p.applies_to("text/html")
        (True, True, False)
        """
        return any(fnmatch.fnmatchcase(mime, pattern) for pattern in self.mime)

    def command(self, argv: tuple[str, ...], paths: Sequence[bytes]) -> list[str | bytes]:
        """``argv`` with its ``%s`` replaced by ``paths``."""
        out: list[str | bytes] = []
        for arg in argv:
            if arg == PATH:
                out.extend(paths)
            else:
                out.append(arg)
        return out
