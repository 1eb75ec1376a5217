"""``harvester watch``: collections kept current at a fixed budget, the sources watched
and the budget's token bucket; the revisit policies are ``harvester.recrawl``'s.

May import: ``harvester.recrawl``, ``harvester.run``, ``harvester.crawl``,
``harvester.http``, ``harvester.archive``, ``harvester.storage`` and the top-level
modules; never ``cli``."""
