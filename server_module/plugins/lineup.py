"""The plugins a provider runs, from its settings: the built-ins asked for whose tools are
installed, then the ``[[plugin]]`` tables; none at all when ``plugins`` is off."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from coop_common.settings import SettingsError
from server_module.plugins import child
from server_module.plugins.builtins import BUILTINS, resolve, tool_version
from server_module.plugins.runner import PluginRunner
from server_module.plugins.spec import Plugin, PluginSpec

log = logging.getLogger(__name__)


def custom(spec: PluginSpec, timeout: float, limits: child.Limits) -> Plugin:
    """A ``[[plugin]]`` table's command as a plugin of one file a run."""
    return Plugin(
        spec.label,
        os.path.basename(spec.command[0]),
        tool_version(spec.version, limits),
        (spec.command,),
        spec.mime,
        spec.timeout or timeout,
    )


def lineup(
    builtins: Sequence[str],
    specs: Sequence[PluginSpec],
    *,
    timeout: float,
    limits: child.Limits,
    workers: int,
    docroot: str | os.PathLike[str],
) -> PluginRunner:
    """The runner of the built-ins named in ``builtins`` (those installed) and ``specs``."""
    unknown = [name for name in builtins if name not in BUILTINS]
    if unknown:
        raise SettingsError(
            f"builtin_plugins: unknown plugin(s) {', '.join(unknown)}"
            f" (built-ins: {', '.join(BUILTINS)})"
        )
    plugins = [p for name in builtins if (p := resolve(BUILTINS[name], timeout, limits))]
    labels = {p.label for p in plugins}
    for spec in specs:
        if spec.label in labels:
            raise SettingsError(f"plugin {spec.label!r}: the label is used twice")
        labels.add(spec.label)
        plugins.append(custom(spec, timeout, limits))
    for plugin in plugins:
        log.debug("plugin %s: %s %s", plugin.label, plugin.tool, plugin.tool_version or "?")
    return PluginRunner(
        plugins,
        limits=limits,
        workers=workers,
        docroot=os.fsencode(os.path.abspath(docroot)),
    )
