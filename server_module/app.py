"""The application factory: ``create_app(docroot=..., base_url=...)`` is a WSGI application.

It opens (and refreshes) the file index, builds the repository, and mounts the OAI-PMH
endpoint and the ResourceSync documents (:mod:`server_module.resourcesync`); with
``serve_files`` (the default) it also serves the site's files, otherwise the web server in
front (nginx, Apache) serves them and proxies only the endpoint and the documents. A plain
file GET is answered before Flask (:mod:`server_module.files.gate`).
"""

from __future__ import annotations

import atexit
import logging
import os
from typing import Any

from flask import Flask

from server_module.files.gate import FileGate
from server_module.formats import FormatRegistry, default_registry
from server_module.index.fileindex import FileIndex, default_index_path
from server_module.index.lock import IndexLock
from server_module.index.refresher import Refresher
from server_module.plugins.child import Limits
from server_module.plugins.lineup import lineup
from server_module.plugins.runner import PluginRunner
from server_module.repository import Repository
from server_module.resourcesync.ledger import default_ledger_path
from server_module.resourcesync.source import Source
from server_module.resourcesync.views import resourcesync_blueprint
from server_module.settings import ProviderSettings, load_settings
from server_module.views import file_blueprint, make_blueprint

log = logging.getLogger(__name__)


def create_app(
    docroot: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    config_file: str | os.PathLike[str] | None = None,
    formats: FormatRegistry | None = None,
    refresh: bool = True,
    lock: bool = True,
    settings: ProviderSettings | None = None,
    **flags: Any,
) -> Flask:
    """Build the provider; settings layer as defaults < ``config_file`` < env < arguments,
    unless given whole as ``settings`` (``serve``'s workers: a flag cannot say "none").

    The index is locked first, shared (:mod:`server_module.index.lock`), for as long as the
    application lives; ``lock=False`` when the caller holds the lock (``serve``'s workers).
    """
    if settings is None:
        settings = load_settings(
            config_file=config_file, docroot=docroot, base_url=base_url, **flags
        )
    index = file_index(settings)
    owner = IndexLock(index.path, shared=True).open() if lock else None
    try:
        index.open()
    except BaseException:
        if owner is not None:
            owner.close()
        raise
    if refresh:
        index.refresh(analyse="later")  # the files are listed at once; their analyses follow
    else:
        index.analyse_later()  # what a refresh before (serve's, or a killed process's) left
    app = Flask(__name__, static_folder=None)
    repo = Repository(
        settings,
        index,
        formats or default_registry(),
        stylesheet_url=settings.endpoint + "/oai2.xsl",
    )
    refresher = Refresher(index, settings.refresh_interval, watch=settings.watch)
    app.extensions.update(oai_repository=repo, oai_settings=settings, oai_refresher=refresher)
    app.extensions["oai_index_lock"] = owner  # held while the application lives
    app.register_blueprint(make_blueprint(settings.endpoint))
    if settings.resourcesync:
        source = Source(index, default_ledger_path(index.path)).open()
        source.sync()  # the first sync is the ResourceSync baseline
        app.extensions["resourcesync_source"] = source
        app.register_blueprint(resourcesync_blueprint())
    if settings.serve_files:
        app.register_blueprint(file_blueprint())
    app.before_request(refresher.open)
    atexit.register(refresher.close)
    if settings.serve_files:
        app.wsgi_app = FileGate(app)  # type: ignore[method-assign]
    return app


def file_index(settings: ProviderSettings) -> FileIndex:
    """The file index the settings describe, not yet opened."""
    return FileIndex(
        settings.index_path or default_index_path(settings.docroot),
        settings.docroot,
        settings.base_url,
        exclude=settings.exclude,
        allow_outside=settings.allow_outside,
        rebase=settings.rebase,
        plugins=plugin_runner(settings),
    )


def plugin_runner(settings: ProviderSettings) -> PluginRunner | None:
    """The plugins the settings ask for; None when ``plugins`` is off."""
    if not settings.plugins:
        return None
    return lineup(
        settings.builtin_plugins,
        settings.plugin,
        timeout=settings.plugin_timeout,
        limits=Limits(settings.plugin_timeout, settings.plugin_memory, settings.plugin_output_max),
        workers=settings.plugin_workers,
        docroot=settings.docroot,
    )
