"""One ListRecords page read (harvester.records.pages): which header and which metadata count."""

from __future__ import annotations

from lxml import etree

from harvester.oai.client import ListedHeader
from harvester.records.pages import read_page

URL = "http://127.0.0.1/oai"
NS = "http://www.openarchives.org/OAI/2.0/"
HEADER = (
    "<header><identifier>{0}</identifier><datestamp>2024-01-0{1}</datestamp>"
    "<setSpec> a </setSpec><setSpec> </setSpec></header>"
)


def page(*records: str) -> bytes:
    inner = "".join(f"<record>{r}</record>" for r in records)
    return (
        f'<?xml version="1.0"?><OAI-PMH xmlns="{NS}"><responseDate>2024-02-01T00:00:00Z'
        f'</responseDate><ListRecords>{inner}<resumptionToken completeListSize="7">t2'
        "</resumptionToken></ListRecords></OAI-PMH>"
    ).encode()


def test_the_first_header_and_the_first_element_of_any_metadata_part_count() -> None:
    read = read_page(
        page(
            "<!--before-->" + HEADER.format("i1", 1) + HEADER.format("ignored", 2)
            + "<metadata/><metadata><!--x--><m:a xmlns:m='u'>é</m:a><b/></metadata>",
            "<metadata><c>1</c></metadata>" + HEADER.format("i2", 3) + "<about><d/></about>",
            '<header status="deleted"><identifier>i3</identifier>'
            "<datestamp>2024-01-04</datestamp></header>",
        ),
        URL,
    )  # fmt: skip
    assert [r.header for r in read.records] == [
        ListedHeader("i1", "2024-01-01", ("a",), False),
        ListedHeader("i2", "2024-01-03", ("a",), False),
        ListedHeader("i3", "2024-01-04", (), True),
    ]
    assert read.metadata == (
        f'<m:a xmlns:m="u" xmlns="{NS}">é</m:a>'.encode(),
        f'<c xmlns="{NS}">1</c>'.encode(),
        b"",
    )
    assert [r.element.tag for r in read.records] == [f"{{{NS}}}record"] * 3
    assert (read.token, read.complete_list_size, read.broken) == ("t2", 7, ())


def test_records_without_a_header_identifier_or_good_datestamp_are_reported() -> None:
    read = read_page(
        page(
            "<metadata><m/></metadata>",
            "<header><datestamp>2024-01-01</datestamp></header>",
            "<header><identifier>i4</identifier><datestamp>May</datestamp></header>",
            HEADER.format("i5", 5) + "<metadata><n/></metadata>",
        ),
        URL,
    )
    assert [r.header.identifier for r in read.records] == ["i5"]
    assert read.metadata == (etree.tostring(etree.fromstring(f'<n xmlns="{NS}"/>')),)
    assert read.broken[0] == f"{URL}: a <record> without <header>"
    assert read.broken[1] == f"{URL}: a <header> without <identifier>"
    assert read.broken[2].startswith(f"{URL}: record 'i4': ")
