"""The crawl's seen-URL test: the test itself, its in-memory CLOCK cache and the sorted
file of fingerprints on disk.

May import: the rest of ``harvester.crawl`` and the harvester's top-level modules."""
