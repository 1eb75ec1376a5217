"""Format identification of archived payloads (``--identify``): content sniffing,
libmagic and PRONOM, and the child process that identifies them.

May import: the harvester's top-level modules and ``coop_common``."""
