"""Child process for ``tests.servers.start_wsgi``: bind port 0, print it, serve forever.

The socket is bound before the application is built, so string arguments may name the port
they will be served on (``"http://{host}:{port}"``), as a provider's base URL must.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
from typing import Any

from werkzeug.serving import make_server


def _fill(value: Any, host: str, port: int) -> Any:
    if isinstance(value, str):
        return value.replace("{host}", host).replace("{port}", str(port))
    return value


def main(factory: str, kwargs_json: str, host: str) -> None:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(host, 0, lambda environ, start_response: [], threaded=True)
    port = server.server_port
    module_name, _, attr = factory.partition(":")
    kwargs = {k: _fill(v, host, port) for k, v in json.loads(kwargs_json).items()}
    server.app = getattr(importlib.import_module(module_name), attr)(**kwargs)
    print(f"PORT {port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(*sys.argv[1:4])
