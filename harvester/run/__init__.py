"""One harvest run: its assembly (the factory), discovery, the collection lock, the run
log, worker processes, its progress, and the crawl's factory, imported lazily.

May import: ``harvester.listed``, ``harvester.records``, ``harvester.crawl``,
``harvester.oai``, ``harvester.http``, ``harvester.archive``, ``harvester.storage`` and
the top-level modules; never ``collection``, ``watch`` or ``cli``."""
