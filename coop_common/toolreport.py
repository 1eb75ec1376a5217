"""A plugin's result as a ``pres:analysis`` element (``schemas/preservation.xsd``): which
plugin, which tool at which version, when it ran and how it ended, and what it printed: as
XML when that is well-formed XML without a document type declaration, else as text."""

from __future__ import annotations

from lxml import etree

from coop_common.analysis import Analysis
from coop_common.premis import iso
from coop_common.xmltext import attr, text

PRES = "urn:coop-archive:preservation:1.0"
_SAFE = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


def as_xml(output: bytes) -> str | None:
    """``output`` as one XML element without its declaration; None when it is not XML.

    >>> as_xml(b"<?xml version='1.0'?><a x='1'>b</a>"), as_xml(b"a < b"), as_xml(b"")
    ('<a x="1">b</a>', None, None)
    """
    if not output.lstrip().startswith(b"<"):
        return None
    try:
        root = etree.fromstring(output, _SAFE)
    except etree.XMLSyntaxError:
        return None
    if root.getroottree().docinfo.doctype:
        return None
    return str(etree.tostring(root, encoding="unicode"))


def analysis_element(analysis: Analysis) -> str:
    """The result as one element, its namespace declared on it."""
    xml = as_xml(analysis.output) if analysis.output else None
    body = xml if xml is not None else text(analysis.output.decode("utf-8", "replace"))
    code = f' exitCode="{analysis.exit_code}"' if analysis.exit_code is not None else ""
    return (
        f'<pres:analysis xmlns:pres="{PRES}" label="{attr(analysis.label)}" '
        f'tool="{attr(analysis.tool)}" toolVersion="{attr(analysis.tool_version)}" '
        f'ran="{iso(analysis.ran_at)}" status="{attr(analysis.status)}"{code} '
        f'output="{"xml" if xml is not None else "text"}">{body}</pres:analysis>'
    )
