"""Tests; also home of the shared fixtures (``tests.sites``, ``tests.servers``) used by bench/."""
