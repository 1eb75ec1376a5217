"""List pages kept and compressed: first pages kept until the index changes, the
read-ahead page cache, and the content codings of a response made of parts.

May import: ``server_module.oai`` (a rendered body) and ``coop_common``."""
