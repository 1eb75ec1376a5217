"""A resource carried by value in an ``oai_didl`` record, with the HTTP headers the provider
says a GET of it returns (the DIDL's ``http_header`` descriptor, as mod_oai embeds it).

:func:`carried_page` makes a whole ListRecords page ready to archive (each file decoded,
digested and compressed): strategy ``didl`` calls it in a thread of its own
(:mod:`harvester.listed.listing`), where hashing and ISA-L's deflate, which let go of the GIL, run
beside the archiving of the page before.

The headers are kept only when they can stand for the exchange: status 200, every field a
plain token name and a value without control characters, at most ``MAX_FIELDS`` of them, and
a Content-Length (when given) that is the length of the carried bytes. Otherwise the resource
is kept without them.

A record that carries nothing names its file by reference only, for the fetch step to GET;
its declared Content-Length, summed over the page, tells that step how many bytes are due
(:func:`harvester.listed.shards.process_count`). It is a hint, never trusted for anything else:
only a plain number of at most ``_LENGTH_DIGITS`` digits counts.
"""

from __future__ import annotations

import binascii
import logging
from dataclasses import dataclass

import pybase64
from lxml import etree

from harvester.archive.capturegroup import CarriedBody, Payload, carried_body
from harvester.archive.didl import DIDL_NS, HTTP_NS, PRES_NS
from harvester.http.exchange import wellformed_fields
from harvester.oai.models import RawPage

log = logging.getLogger(__name__)
DIDL, PRES, HTTP = (f"{{{ns}}}" for ns in (DIDL_NS, PRES_NS, HTTP_NS))
_LENGTH_DIGITS = 15  # a declared length past a petabyte is no hint


@dataclass(frozen=True)
class CarriedResource:
    mime: str
    body: bytes
    headers: list[tuple[str, str]] | None  # the provider's, for a 200 of this very body
    encoded: bytes  # the base64 text as the DIDL holds it
    ready: CarriedBody | None  # digested and compressed for its record (None: warcio's)


@dataclass(frozen=True)
class CarriedPage:
    """A ListRecords page of ``oai_didl`` records, ready to archive."""

    raw: RawPage
    carried: tuple[CarriedResource | None, ...]  # what each record carries, in order
    referenced_bytes: int  # the declared sizes of the files it names by reference only


def carried_page(raw: RawPage) -> CarriedPage:
    """``raw`` with what each of its records carries by value (None for a deletion, or a
    record that carries nothing usable)."""
    carried: list[CarriedResource | None] = []
    referenced = 0
    for record in raw.records:
        meta = None if record.header.deleted else record.metadata
        found = None if meta is None else carried_resource(meta)
        if meta is not None and found is None:
            referenced += declared_length(meta)
        carried.append(found)
    return CarriedPage(raw, tuple(carried), referenced)


def declared_length(didl: etree._Element) -> int:
    """The Content-Length a DIDL's ``http_header`` declares for its file, 0 if none is a
    plain number.

    >>> from lxml import etree
    >>> def didl(value):
    ...     field = f'<h:field xmlns:h="{HTTP_NS}" name="Content-Length">{value}</h:field>'
    ...     return etree.fromstring(f'<h:header xmlns:h="{HTTP_NS}">{field}</h:header>')
    >>> [declared_length(didl(v)) for v in ("1048577", "-5", "1e3", "9" * 16)]
    [1048577, 0, 0, 0]
    """
    for field in didl.iter(f"{HTTP}field"):
        if (field.get("name") or "").lower() == "content-length":
            value = (field.text or "").strip()
            plain = value.isascii() and value.isdigit() and len(value) <= _LENGTH_DIGITS
            return int(value) if plain else 0
    return 0


def carried_resource(didl: etree._Element) -> CarriedResource | None:
    """The resource a DIDL carries by value, if its bytes match the DIDL's SHA-256."""
    for resource in didl.iter(f"{DIDL}Resource"):
        if resource.get("encoding") != "base64":
            continue
        try:
            encoded = (resource.text or "").encode("ascii")
            body = pybase64.b64decode(encoded, validate=True)  # 40x binascii's speed, same checks
        except (binascii.Error, ValueError):
            log.warning("a DIDL carried undecodable base64; fetching by reference instead")
            return None
        expected = didl.findtext(f".//{PRES}digest[@algorithm='sha256']")
        payload = Payload.of(body)
        if expected and payload.sha256 != expected:
            log.warning("a DIDL's bytes do not match its digest; fetching by reference instead")
            return None
        mime = resource.get("mimeType") or "application/octet-stream"
        headers = _http_headers(didl, len(body))
        ready = carried_body(body, headers, payload)
        return CarriedResource(mime, body, headers, encoded, ready)
    return None


def _http_headers(didl: etree._Element, length: int) -> list[tuple[str, str]] | None:
    header = next(didl.iter(f"{HTTP}header"), None)
    if header is None or header.findtext(f"{HTTP}status") is None:
        return None
    status = header.find(f"{HTTP}status")
    if status is None or status.get("code") != "200":
        return None
    fields = [(f.get("name") or "", f.text or "") for f in header.iterfind(f"{HTTP}field")]
    if not wellformed_fields(fields):
        log.warning("a DIDL's http_header descriptor is malformed; keeping the bytes only")
        return None
    declared = [v for n, v in fields if n.lower() == "content-length"]
    if declared and declared != [str(length)]:
        log.warning("a DIDL's http_header describes other bytes; keeping the bytes only")
        return None
    return fields
