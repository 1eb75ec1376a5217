"""What reads a collection: its folder, ``status``, ``verify``, ``report``, ``wacz``, a
site's URL list, and a harvest that never finished as these commands meet it.

May import: ``harvester.run`` (lock, run log, discovery), ``harvester.archive``,
``harvester.storage``, ``harvester.oai``, ``harvester.http`` and the top-level
modules; never ``watch`` or ``cli``."""
