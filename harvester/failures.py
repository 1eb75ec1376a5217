"""The failure lifecycle: what a failed fetch makes of its resource, and of the run's exit code.

=======================  ==============================  ====================================
the answer               the resource becomes            the run
=======================  ==============================  ====================================
404 or 410, first time   ``failed``: retried             ``failed`` +1, exit 3
404 or 410, the same     ``gone``: settled; a listed     ``gone`` +1, no reason for exit 3
again (and while gone)   one is fetched again only when
                         a newer version is listed, a
                         crawled one when a crawl finds
                         its link again
any other failure        ``failed``: retried after a     ``failed`` +1, exit 3
(403, 5xx, 429, network) back-off that doubles
the ``max_attempts``-th  ``abandoned``: settled until a  ``abandoned`` (the state's count),
failure in a row         newer version is listed         no reason for exit 3
a good answer            ``archived``                    ``fetched`` or ``unchanged``
=======================  ==============================  ====================================

A run exits 3 (``PARTIAL``) only for failures that are new or still being retried, so a cron
job sees a broken link on the run that meets it and on the retry, and never again while the
link stays broken; ``harvest``'s summary, ``runs.jsonl``, ``status`` and ``report`` count the
same three statuses (docs/collection.md, "The failure lifecycle").
"""

from __future__ import annotations

import logging

from harvester.exceptions import RobotsUnreachable
from harvester.storage.protocol import Resource

GONE = (404, 410)  # the server says the URL is not there


def settles_gone(res: Resource | None, http_status: int | None) -> bool:
    """Whether this answer makes the resource ``gone``: a 404 or 410 repeating the HTTP
    status the state holds for it, that of its last failed attempt or of its last capture
    (an archived 404 page), or answered again while it is gone.

    >>> from harvester.storage.protocol import Resource
    >>> def res(status: str, http: int | None, attempts: int) -> Resource:
    ...     return Resource("http://h/x", status=status, attempts=attempts, http_status=http)
    >>> settles_gone(res("pending", None, 0), 404)  # the first answer: retried
    False
    >>> settles_gone(res("failed", 404, 1), 404), settles_gone(res("gone", 410, 2), 410)
    (True, True)
    >>> settles_gone(res("failed", 503, 1), 404), settles_gone(res("failed", 404, 1), 503)
    (False, False)
    >>> settles_gone(res("archived", 200, 0), 404)  # was there at its last capture
    False
    >>> settles_gone(res("archived", 404, 0), 404)  # its 404 page was archived last time
    True
    """
    if res is None or http_status not in GONE:
        return False
    return res.http_status == http_status


def log_level(exc: BaseException) -> int:
    """How loudly to log one URL's failed fetch: a failure its host's unreadable robots.txt
    caused is INFO, since ``robots.py`` warned once for the whole host."""
    return logging.INFO if isinstance(exc, RobotsUnreachable) else logging.WARNING
