"""Running the provider under gunicorn, the production WSGI server, without a config file.

The index is refreshed once here, before the workers start; each worker then opens it without
a start-up refresh and keeps it current with its own :class:`~server_module.refresher.Refresher`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from server_module.app import file_index
from server_module.scan import outside_report
from server_module.settings import load_settings

log = logging.getLogger(__name__)


class ProviderServer(BaseApplication):  # type: ignore[misc]
    def __init__(self, factory_kwargs: dict[str, Any], options: dict[str, Any]) -> None:
        self.factory_kwargs = factory_kwargs
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from server_module.app import create_app

        return create_app(refresh=False, **self.factory_kwargs)


def serve_forever(
    docroot: Path, *, host: str, port: int, workers: int, threads: int, **flags: Any
) -> int:
    settings = load_settings(docroot=docroot, **flags)
    with file_index(settings) as idx:
        idx.refresh()
    if report := outside_report(idx.outside):
        log.warning("%s", report)
    options = {
        "bind": f"{host}:{port}",
        "workers": workers,
        "threads": threads,
        "worker_class": "gthread" if threads > 1 else "sync",
        "accesslog": settings.access_log,
        "timeout": 120,
        "graceful_timeout": 5,
        # gunicorn's largest (default 4094): a GET of a MAX_TOKEN_LENGTH token must fit
        "limit_request_line": 8190,
    }
    ProviderServer({"docroot": docroot, **flags, "index_path": idx.path}, options).run()
    return 0
