"""The one HTTP seam for resources: the fetcher, its connection pool and connections,
request URLs, redirects, retries, robots.txt, per-host pacing, the limits of both HTTP
clients and the exchange value the archive records.

May import: the harvester's top-level modules (``clock``, ``exceptions``,
``settings``) only; every other package stands on it."""
