"""The two keys a CDXJ line starts with: a URL's SURT and a WARC-Date's 14-digit timestamp.

Both must be exactly what cdxj-indexer writes, since pywb finds captures by them: the SURT of
``surt.surt(url)`` with its defaults, and warcio's ``iso_date_to_timestamp``. Those are general
and slow: ``surt`` runs the Google and Internet Archive canonicalisers on every URL (29 µs
a URL on the benchmark site's URLs, where the short path takes 6 µs), and warcio parses the
date into a datetime and formats it again.

So plain inputs take a short path, and everything else goes to the general functions:

- a URL of the form ``http(s)://host[:port][/path]``, with a lower-case host that is not an IP
  address in an unusual notation, and a path of unreserved characters and escapes of bytes
  surt escapes again (a space, ``#``, and bytes from 0x7F: a site's ``about%20us/``), with no
  query and no ``.`` or empty segment, which the canonicalisers would only lower-case;
- a WARC-Date in the form this writer makes, ``YYYY-MM-DDThh:mm:ss[.ffffff]Z``.

``tests/test_cdxkey.py`` checks the short paths against ``surt`` and warcio on generated input.

>>> url_key("http://www.Example.org/A/b.html")  # upper case in the host: the general path
'org,example)/a/b.html'
>>> url_key("https://example.org:443/a/b/")
'org,example)/a/b'
>>> timestamp("2026-11-30T05:46:01.123456Z")
'20261130054601'
"""

from __future__ import annotations

import functools
import re

__all__ = ["timestamp", "url_key"]

_KEPT_ESCAPE = r"%(?:20|23|7[Ff]|[89A-Fa-f][0-9A-Fa-f])"  # unescaped, then escaped again
_PLAIN_URL = re.compile(
    r"(https?)://((?:[a-z0-9-]+\.)*[a-z0-9-]+)"  # scheme, host
    r"(?::([1-9][0-9]{0,4}))?"  # port
    rf"((?:/(?:[A-Za-z0-9_~-]|{_KEPT_ESCAPE})(?:[A-Za-z0-9._~-]|{_KEPT_ESCAPE})*)*/?)"  # path
)
_WWW = re.compile(r"www\d*\.")
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_QUAD_PART = re.compile(r"0|[1-9][0-9]{0,2}")
_WARC_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z")


def url_key(url: str) -> str:
    """The SURT cdxj-indexer gives ``url``: ``surt.surt(url)``, or ``url`` itself if that fails."""
    key = _plain_url_key(url)
    if key is not None:
        return key
    import surt  # only for the URLs the short path leaves: it imports tldextract and requests

    try:
        general: str = surt.surt(url)
    except Exception:  # cdxj-indexer falls back on any failure, and so do we
        return url
    return general


def timestamp(warc_date: str) -> str:
    """The 14-digit timestamp of a WARC-Date, as warcio's ``iso_date_to_timestamp``."""
    if _WARC_DATE.fullmatch(warc_date):
        d = warc_date
        return d[0:4] + d[5:7] + d[8:10] + d[11:13] + d[14:16] + d[17:19]
    from warcio.timeutils import iso_date_to_timestamp

    general: str = iso_date_to_timestamp(warc_date)
    return general


def _plain_url_key(url: str) -> str | None:
    """The SURT of a plain URL (see the module docstring), or None if it is not one."""
    match = _PLAIN_URL.fullmatch(url)
    if match is None:
        return None
    scheme, host, port, path = match.groups()
    authority = _authority(scheme, host, port)
    if authority is None:
        return None
    path = path.lower()
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return f"{authority}){path or '/'}"


@functools.lru_cache(maxsize=1024)  # a site's URLs share a few authorities
def _authority(scheme: str, host: str, port: str | None) -> str | None:
    """The SURT's reversed host and port of a plain URL's, or None if it is not plain."""
    if port is not None and int(port) > 65535:
        return None  # not a port: surt fails, and the key is the URL itself
    labels = host.split(".")
    if all(_NUMERIC_LABEL.fullmatch(label) for label in labels) and not (
        len(labels) == 4 and all(_QUAD_PART.fullmatch(label) for label in labels)
    ):
        return None  # an IP address in another notation, or a bare number: canonicalised
    www = _WWW.match(host)
    if www is not None and www.end() < len(host):
        labels = host[www.end() :].split(".")
    authority = ",".join(reversed(labels))
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        authority += ":" + port
    return authority
