"""The provider's file index: the folder scan and its public-path rules, each file's
metadata, the changes a refresh finds, the writer, the schema, the snapshot (the read
side), the lock, the refresher and watcher that keep it current, a new base URL.

May import: ``server_module.records``, ``server_module.exceptions``,
``server_module.plugins`` (the plugins' store and survey) and ``coop_common``; never
the views, the repository or the OAI-PMH protocol."""
