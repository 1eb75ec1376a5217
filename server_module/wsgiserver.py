"""Running the provider under gunicorn, the production WSGI server, without a config file.

The index is locked and refreshed once here, before the workers start; each worker (holding the
lock it inherited) then opens it without a start-up refresh and keeps it current with its own
:class:`~server_module.index.refresher.Refresher`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from gunicorn.app.base import BaseApplication

from server_module.app import file_index
from server_module.index.fileindex import default_index_path
from server_module.index.lock import IndexLock
from server_module.index.scan import outside_report
from server_module.preflight import check_address, check_index_folder
from server_module.settings import ProviderSettings

log = logging.getLogger(__name__)


class ProviderServer(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: ProviderSettings, options: dict[str, Any]) -> None:
        self.settings = settings
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from server_module.app import create_app

        return create_app(refresh=False, lock=False, settings=self.settings)


def serve_forever(settings: ProviderSettings) -> int:
    """Check the index's folder, lock the index (:mod:`server_module.index.lock`; the forked
    workers inherit the lock), check the address, refresh once, then run gunicorn."""
    path = settings.index_path or default_index_path(settings.docroot)
    check_index_folder(path)
    with IndexLock(path):
        check_address(settings.host, settings.port)
        with file_index(settings) as idx:
            idx.refresh(analyse="none")  # each worker's plugin thread analyses what is due
        if report := outside_report(idx.outside):
            log.warning("%s", report)
        # the settings whole: as flags, an empty list (builtin_plugins = []) would not override
        ProviderServer(replace(settings, index_path=idx.path), _options(settings)).run()
    return 0


def _options(settings: ProviderSettings) -> dict[str, Any]:
    return {
        "bind": f"{settings.host}:{settings.port}",
        "workers": settings.workers,
        "threads": settings.threads,
        "worker_class": "gthread" if settings.threads > 1 else "sync",
        "accesslog": settings.access_log,
        "timeout": 120,
        "graceful_timeout": 5,
        # gunicorn's largest (default 4094): a GET of a MAX_TOKEN_LENGTH token must fit
        "limit_request_line": 8190,
    }
