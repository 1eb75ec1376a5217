"""mod_wsgi's entry point (deploy/apache.conf): the provider without its file serving, its
settings from the file OAI_PROVIDER_CONFIG names (/etc/oai-provider/provider.toml unless set)
and the OAI_PROVIDER_* variables of Apache's environment."""

import os

from server_module import create_app

application = create_app(
    config_file=os.environ.get("OAI_PROVIDER_CONFIG", "/etc/oai-provider/provider.toml"),
    serve_files=False,
)
