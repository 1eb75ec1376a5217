"""Running the provider under gunicorn, the production WSGI server, without a config file.

The index is refreshed once here, before the workers start; each worker then opens it without
a start-up refresh and keeps it current with its own :class:`~server_module.refresher.Refresher`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from server_module.index import FileIndex, default_index_path
from server_module.settings import load_settings


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
    index_path = settings.index_path or default_index_path(settings.docroot)
    with FileIndex(
        index_path, settings.docroot, settings.base_url, exclude=settings.exclude
    ) as idx:
        idx.refresh()
    options = {
        "bind": f"{host}:{port}",
        "workers": workers,
        "threads": threads,
        "worker_class": "gthread" if threads > 1 else "sync",
        "accesslog": os.environ.get("OAI_PROVIDER_ACCESS_LOG"),
        "timeout": 120,
        "graceful_timeout": 5,
        # gunicorn's largest (default 4094): a GET of a MAX_TOKEN_LENGTH token must fit
        "limit_request_line": 8190,
    }
    ProviderServer({"docroot": docroot, **flags, "index_path": index_path}, options).run()
    return 0
