"""Child process for ``tests.servers.start_wsgi``: bind port 0, print it, serve forever."""

from __future__ import annotations

import importlib
import json
import logging
import sys

from werkzeug.serving import make_server


def main(factory: str, kwargs_json: str, host: str) -> None:
    module_name, _, attr = factory.partition(":")
    app = getattr(importlib.import_module(module_name), attr)(**json.loads(kwargs_json))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(host, 0, app, threaded=True)
    print(f"PORT {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(*sys.argv[1:4])
