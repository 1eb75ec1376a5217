"""A file as a PREMIS 3 object, with the tool runs that described it.

PREMIS Data Dictionary 3.0 (schema ``http://www.loc.gov/standards/premis/v3/premis.xsd``):
one ``object`` of type ``file`` (identified by its URL) whose ``objectCharacteristics`` hold
its fixity (SHA-1 and SHA-256), its size and its format: the PRONOM PUID, name and version
when the ``pronom`` run identified it, else libmagic's MIME type, else the type its name or
its server declared, with a note saying which. Each plugin run is an ``event`` (``format
identification`` for libmagic and PRONOM, ``metadata extraction`` for the others; its
outcome ``success`` or the run's status) linked to the object and to the tool, an ``agent``
of type ``software`` with its version (``agentVersion``, new in PREMIS 3). The tools are
agents, not ``creatingApplication``: that semantic unit names the software that made the
file (a PDF's producer), whereas these tools only looked at it; an event with the role
``executing program`` is how PREMIS records software that acted on an object.

The provider's ``premis`` format and the Component of its ``oai_didl`` records carry it, and
so do the harvester's DIDL records of payloads it identified (``--identify``): a collection
describes its files the same way whatever path brought them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from coop_common.analysis import Analysis
from coop_common.xmltext import text

NAMESPACE = "http://www.loc.gov/premis/v3"
SCHEMA = "http://www.loc.gov/standards/premis/v3/premis.xsd"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
IDENTIFYING = frozenset({"libmagic", "pronom"})  # plugins whose runs are format identification


@dataclass(frozen=True)
class FileFacts:
    """What the object states: the file's URL, digests, size, the MIME type known without
    the tools (and where it came from) and the tools' runs."""

    identifier: str
    sha1: str
    sha256: str
    size: int
    mime: str
    mime_source: str  # e.g. "the file name", "the server's Content-Type"
    analyses: Sequence[Analysis] = ()


def _el(name: str, value: str) -> str:
    return f"<premis:{name}>{text(value)}</premis:{name}>"


def iso(second: int) -> str:
    """A UTC second as an ``xs:dateTime``.

    >>> iso(0)
    '1970-01-01T00:00:00Z'
    """
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def agent_id(analysis: Analysis) -> str:
    return f"{analysis.tool} {analysis.tool_version}".strip()


def event_id(analysis: Analysis) -> str:
    return f"urn:coop-archive:analysis:{analysis.sha256}:{analysis.label}"


def _designation(inner: str) -> str:
    return f"<premis:formatDesignation>{inner}</premis:formatDesignation>"


def format_element(record: FileFacts) -> str:
    """The best format designation the plugins gave, else the name's guess, noted."""
    facts = {a.label: a.facts for a in record.analyses if a.ok}
    pronom, magic = facts.get("pronom", {}), facts.get("libmagic", {})
    if "puid" in pronom:
        designation = _el("formatName", pronom.get("format_name", pronom["puid"]))
        if pronom.get("format_version"):
            designation += _el("formatVersion", pronom["format_version"])
        registry = (
            "<premis:formatRegistry>"
            + _el("formatRegistryName", "PRONOM")
            + _el("formatRegistryKey", pronom["puid"])
            + _el("formatRegistryRole", "specification")
            + "</premis:formatRegistry>"
        )
        body = _designation(designation) + registry
        basis = pronom.get("basis", "signature")
        note = (
            "PRONOM identification by the file name's extension only: the content matched"
            " no signature"
            if basis == "extension"
            else f"PRONOM identification by content ({basis})"
        )
    elif magic.get("mime"):
        body = _designation(_el("formatName", magic["mime"]))
        note = "MIME type by content (libmagic); no PRONOM identification"
    else:
        body = _designation(_el("formatName", record.mime))
        note = f"MIME type from {record.mime_source}"
    notes = _el("formatNote", note)
    if magic.get("description"):
        notes += _el("formatNote", f"libmagic: {magic['description']}")
    return f"<premis:format>{body}{notes}</premis:format>"


def object_element(record: FileFacts) -> str:
    fixity = "".join(
        f"<premis:fixity>{_el('messageDigestAlgorithm', name)}{_el('messageDigest', value)}"
        "</premis:fixity>"
        for name, value in (("SHA-1", record.sha1), ("SHA-256", record.sha256))
    )
    links = "".join(
        "<premis:linkingEventIdentifier>"
        + _el("linkingEventIdentifierType", "URN")
        + _el("linkingEventIdentifierValue", event_id(a))
        + "</premis:linkingEventIdentifier>"
        for a in record.analyses
    )
    return (
        '<premis:object xsi:type="premis:file">'
        "<premis:objectIdentifier>"
        + _el("objectIdentifierType", "URL")
        + _el("objectIdentifierValue", record.identifier)
        + "</premis:objectIdentifier>"
        f"<premis:objectCharacteristics>{_el('compositionLevel', '0')}{fixity}"
        f"{_el('size', str(record.size))}{format_element(record)}"
        f"</premis:objectCharacteristics>{links}</premis:object>"
    )


def event_element(record: FileFacts, analysis: Analysis) -> str:
    kind = "format identification" if analysis.label in IDENTIFYING else "metadata extraction"
    outcome = "success" if analysis.ok else "failure"
    detail = f"plugin {analysis.label}: {analysis.status}"
    if analysis.exit_code is not None:
        detail += f", exit code {analysis.exit_code}"
    return (
        "<premis:event><premis:eventIdentifier>"
        + _el("eventIdentifierType", "URN")
        + _el("eventIdentifierValue", event_id(analysis))
        + "</premis:eventIdentifier>"
        + _el("eventType", kind)
        + _el("eventDateTime", iso(analysis.ran_at))
        + "<premis:eventDetailInformation>"
        + _el("eventDetail", f"{analysis.label}: {agent_id(analysis)}")
        + "</premis:eventDetailInformation><premis:eventOutcomeInformation>"
        + _el("eventOutcome", outcome)
        + "<premis:eventOutcomeDetail>"
        + _el("eventOutcomeDetailNote", detail)
        + "</premis:eventOutcomeDetail></premis:eventOutcomeInformation>"
        + "<premis:linkingAgentIdentifier>"
        + _el("linkingAgentIdentifierType", "local")
        + _el("linkingAgentIdentifierValue", agent_id(analysis))
        + _el("linkingAgentRole", "executing program")
        + "</premis:linkingAgentIdentifier><premis:linkingObjectIdentifier>"
        + _el("linkingObjectIdentifierType", "URL")
        + _el("linkingObjectIdentifierValue", record.identifier)
        + "</premis:linkingObjectIdentifier></premis:event>"
    )


def agent_element(analysis: Analysis) -> str:
    version = _el("agentVersion", analysis.tool_version) if analysis.tool_version else ""
    return (
        "<premis:agent><premis:agentIdentifier>"
        + _el("agentIdentifierType", "local")
        + _el("agentIdentifierValue", agent_id(analysis))
        + "</premis:agentIdentifier>"
        + _el("agentName", analysis.tool)
        + _el("agentType", "software")
        + version
        + "</premis:agent>"
    )


def premis_element(record: FileFacts) -> str:
    """The record as one ``premis:premis`` element, namespaces declared on it."""
    agents: dict[str, str] = {}
    for a in record.analyses:
        agents.setdefault(agent_id(a), agent_element(a))
    events = "".join(event_element(record, a) for a in record.analyses)
    return (
        f'<premis:premis xmlns:premis="{NAMESPACE}" xmlns:xsi="{XSI}" version="3.0" '
        f'xsi:schemaLocation="{NAMESPACE} {SCHEMA}">'
        f"{object_element(record)}{events}{''.join(agents.values())}</premis:premis>"
    )
