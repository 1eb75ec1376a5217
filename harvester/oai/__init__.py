"""The OAI-PMH client, the harvester's one seam to OAI-PMH 2.0: the client, its HTTP
layer and transports, the values a response is read into (with the OAI namespace),
Identify read for what is usable, datestamps and the guard of a resumption loop.

May import: ``harvester.http`` and the harvester's top-level modules (``clock``,
``exceptions``, ``settings``); nothing of the listed path, a run or the commands."""
