"""The one settings loader: defaults < TOML file < environment < flags.

Each package describes its settings as a frozen dataclass whose field defaults are the
defaults; :func:`load` fills one from the layers. A TOML file holds the field names at top
level, the environment ``<PREFIX><FIELD>`` in upper case. Text from the environment is turned
into the field's declared type (resolved with :func:`typing.get_type_hints`, never by reading
the annotation as a string): booleans accept ``1/true/yes/on`` and ``0/false/no/off``, tuples
are comma-separated (paths colon-separated, as ``PATH`` is), and an empty value of an optional
field means None.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from coop_common.exitcode import ExitCode

T = TypeVar("T")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


class SettingsError(ValueError):
    """A setting that cannot be read or has no valid value; the message names it. A command
    reports it as a usage error (``exit_code``)."""

    exit_code = ExitCode.USAGE


def load(
    cls: type[T],
    prefix: str,
    *,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    fixed: Callable[[dict[str, Any]], None] | None = None,
) -> T:
    """``cls`` filled from the layers. Flags that are None or empty tuples do not override;
    ``fixed`` may check or normalise the merged values before the dataclass is built.

    >>> @dataclasses.dataclass(frozen=True)
    ... class S:
    ...     name: str
    ...     loud: bool = False
    ...     tags: tuple[str, ...] = ()
    ...     limit: int | None = None
    >>> load(S, "APP_", environ={"APP_LOUD": "yes", "APP_TAGS": "a,b"}, flags={"name": "x"})
    S(name='x', loud=True, tags=('a', 'b'), limit=None)
    """
    types_ = _field_types(cls)
    values: dict[str, Any] = {}
    if config_file:
        values |= _from_toml(Path(config_file), types_)
    env = os.environ if environ is None else environ
    for name, kind in types_.items():
        if (raw := env.get(prefix + name.upper())) is not None:
            values[name] = _coerce(prefix + name.upper(), kind, raw)
    values |= {k: v for k, v in (flags or {}).items() if v is not None and v != ()}
    unknown = values.keys() - types_.keys()
    if unknown:
        raise SettingsError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    missing = [f.name for f in fields if _required(f) and f.name not in values]
    if missing:
        raise SettingsError(f"missing required setting(s): {', '.join(missing)}")
    for name, value in values.items():
        values[name] = _coerce(name, types_[name], value)
    if fixed is not None:
        fixed(values)
    return cls(**values)


def _field_types(cls: type[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _from_toml(path: Path, types_: Mapping[str, Any]) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            table = tomllib.load(fh)
    except OSError as exc:
        raise SettingsError(f"cannot read the settings file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from exc
    unknown = table.keys() - types_.keys()
    if unknown:
        raise SettingsError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
    return dict(table)


def _coerce(name: str, kind: Any, raw: Any) -> Any:
    """``raw`` (text, or a TOML or flag value) as a value of the declared type ``kind``."""
    optional, base = _unwrap_optional(kind)
    if raw is None or (optional and raw == ""):
        if optional:
            return None
        raise SettingsError(f"{name} needs a value")
    origin = typing.get_origin(base) or base
    try:
        if origin is tuple:
            return _sequence(base, raw)
        if origin is bool:
            return _boolean(name, raw)
        if origin in (int, float, Path, str):
            return _scalar(origin, raw)
    except SettingsError:
        raise
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{name}: {raw!r} is not a valid {_type_name(base)}") from exc
    return raw


def _sequence(kind: Any, raw: Any) -> tuple[Any, ...]:
    """A tuple from a list, or from text: paths split as ``PATH`` is (``:``), the rest at ``,``."""
    item = (typing.get_args(kind) or (str,))[0]
    if isinstance(raw, str):
        raw = [p.strip() for p in raw.split(os.pathsep if item is Path else ",")]
    return tuple(item(p) if item is Path else p for p in raw if p != "")


def _scalar(origin: type[Any], raw: Any) -> Any:
    if origin is int and isinstance(raw, bool | float):
        raise TypeError("not a whole number")
    if origin is float and isinstance(raw, bool):
        raise TypeError("not a number")
    return origin(raw)


def _boolean(name: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingsError(f"{name}: {raw!r} is not a boolean (use true or false)")


def _unwrap_optional(kind: Any) -> tuple[bool, Any]:
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) < len(typing.get_args(kind)) and len(args) == 1:
            return True, args[0]
    return False, kind


def _type_name(kind: Any) -> str:
    return getattr(kind, "__name__", str(kind))
