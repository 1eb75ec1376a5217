r"""What an Identify response (OAI-PMH §4.2) says, read for what is usable of it.

A real repository's Identify is not always what §4.2 asks: a garbage ``earliestDatestamp``, a
missing ``deletedRecord``. Nothing the harvester asks depends on every field, so each
unusable one is warned about (naming the URL and the value) and replaced by what the protocol
allows: day granularity (which every repository must support), ``transient`` deletions, the
endpoint asked for its ``baseURL``, "" for an earliestDatestamp or a name. Only a response
that is no Identify at all (an OAI-PMH error, a broken envelope) is unusable, and
:func:`harvester.oai.client.probe` says so. Not sickle's Identify model: it ``setattr``\s every
descendant's tag name, so a ``<__class__>`` in a ``<description>`` would raise TypeError.

Also here: the one warning a run gives when an endpoint's responseDates carry a UTC offset
(:func:`note_offset`; :func:`harvester.oai.dates.response_date` converts them).
"""

from __future__ import annotations

import functools
import logging

from lxml import etree

from harvester.exceptions import ProtocolError
from harvester.oai.dates import DAY, GRANULARITIES, checked_datestamp
from harvester.oai.models import OAI_NS, EndpointInfo

log = logging.getLogger(__name__)

_OAI = "{" + OAI_NS + "}"
DELETED_RECORD_POLICIES = ("no", "transient", "persistent")


def endpoint_info(root: etree._Element, endpoint: str, url: str) -> EndpointInfo:
    """The ``<Identify>`` under ``root`` (its envelope checked), each unusable field warned
    about and replaced; ``endpoint`` is the URL asked, ``url`` the request's."""
    element = root.find(_OAI + "Identify")
    granularity = _usable_text(element, "granularity", url)
    deleted = _usable_text(element, "deletedRecord", url)
    version = _usable_text(element, "protocolVersion", url)
    return EndpointInfo(
        endpoint=endpoint,
        base_url=_usable_text(element, "baseURL", url) or endpoint,
        repository_name=_usable_text(element, "repositoryName", url),
        granularity=_usable(granularity, GRANULARITIES, "granularity", url, DAY),
        deleted_record=_usable(deleted, DELETED_RECORD_POLICIES, "deletedRecord", url, "transient"),
        earliest_datestamp=_earliest(_usable_text(element, "earliestDatestamp", url), url),
        protocol_version=_usable(version, ("2.0",), "protocolVersion", url, "2.0"),
        compression=_texts(element, "compression"),
    )


def _usable_text(element: etree._Element, name: str, url: str) -> str:
    """The element's child's text, stripped; "" with a warning when it has none."""
    value = (element.findtext(_OAI + name) or "").strip()
    if not value:
        log.warning("%s: Identify without <%s>", url, name)
    return value


def _texts(element: etree._Element, name: str) -> tuple[str, ...]:
    found = ((child.text or "").strip() for child in element.iterfind(_OAI + name))
    return tuple(text for text in found if text)


def _usable(value: str, allowed: tuple[str, ...], what: str, url: str, instead: str) -> str:
    """``value`` if one of ``allowed``; else ``instead``, with a warning naming both."""
    if value in allowed:
        return value
    if value:
        log.warning("%s: Identify's %s %r is not one of %s: taken as %s", url, what, value,
                    ", ".join(allowed), instead)  # fmt: skip
    return instead


def _earliest(value: str, url: str) -> str:
    """The earliestDatestamp if it is a datestamp, else "" with a warning: nothing the
    harvester asks depends on it."""
    try:
        checked_datestamp(value, f"{url}: Identify's earliestDatestamp")
    except ProtocolError as exc:
        if value:
            log.warning("%s: ignored", exc)
        return ""
    return value


def note_offset(endpoint: str, sent: str, date: str) -> None:
    """Warn, once a process for each endpoint, that its responseDates come with a UTC
    offset; each one read is logged at debug level."""
    log.debug("%s: responseDate %r read as %s", endpoint, sent, date)
    _warn_offset(endpoint)


@functools.lru_cache(maxsize=64)  # the memory of "warned once": one key per endpoint
def _warn_offset(endpoint: str) -> None:
    log.warning(
        "%s: responseDates come with a UTC offset (§3.2 asks for UTC, 'Z'); each is"
        " converted to UTC",
        endpoint,
    )
