"""The site's files over HTTP: the document root's safe open, each file's headers, range
requests, the answer to a GET or HEAD, and the WSGI gate that answers before Flask.

May import: ``server_module.index``, ``server_module.records``,
``server_module.repository`` (the type the gate is handed) and ``coop_common``."""
