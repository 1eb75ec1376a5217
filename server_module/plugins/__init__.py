"""Provider plugins: tools run on each new or changed file, their output kept in the index.

As mod_oai's ``modoai_plugin`` did, a plugin is a label, a command (an argument list with
``%s`` for the file's path, run without a shell), a command that prints its version and the
MIME patterns it applies to. The built-ins (:mod:`~server_module.plugins.builtins`) identify
formats (libmagic, PRONOM through fido) and read embedded metadata (ExifTool, pdfinfo,
mediainfo). :mod:`~server_module.plugins.child` runs each tool under time, memory and output
limits; :mod:`~server_module.plugins.runner` runs them in parallel within a CPU budget;
:mod:`~server_module.plugins.store` keeps the results in the index keyed by the file's SHA-256
digest, so a file is analysed once per version; :mod:`~server_module.plugins.survey` finds
what the index's rows still lack (:mod:`server_module.index.analyser` has it analysed after
a refresh has committed the rows, off the request path). This package imports only
:mod:`coop_common` and :mod:`server_module.index.schema`.
"""

from __future__ import annotations

from coop_common.analysis import Analysis
from server_module.plugins.spec import Plugin, PluginSpec

__all__ = ["Analysis", "Plugin", "PluginSpec"]
