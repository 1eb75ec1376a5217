"""The listed path: a site listed through its provider (OAI-PMH or ResourceSync), its
list pages and the resources they carry by value, redirect chains, and the fetch step
over what was listed (concurrent, sharded over processes, following a slow list, a
shared job's part).

May import: ``harvester.oai``, ``harvester.http``, ``harvester.archive``,
``harvester.storage``, ``harvester.crawl`` (canonical URLs) and the top-level modules;
never ``run``, ``collection``, ``watch`` or ``cli``."""
