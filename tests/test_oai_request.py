"""Request parsing: the argument rules of §3.6 and §4, as tables, then properties."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server_module.oai.errors import (
    BadArgument,
    BadVerb,
    CannotDisseminateFormat,
    IdDoesNotExist,
    OAIError,
)
from server_module.oai.request import (
    MAX_ARGUMENTS,
    MAX_VALUE_LENGTH,
    SIGNATURES,
    OAIRequest,
    echo_attributes,
    parse_request,
)
from server_module.oai.tokens import MAX_TOKEN_LENGTH

Pairs = list[tuple[str, str]]

DAY_2024_01_01 = 1704067200
ID = ("identifier", "http://example.org/a.html")
DC = ("metadataPrefix", "oai_dc")
TOKEN = ("resumptionToken", "abc")


def query(verb: str, *pairs: tuple[str, str]) -> Pairs:
    return [("verb", verb), *pairs]


# Each verb with every combination of its arguments that §4 allows.
VALID: list[Pairs] = [
    query("Identify"),
    query("ListMetadataFormats"),
    query("ListMetadataFormats", ID),
    query("ListSets"),
    query("ListSets", TOKEN),
    query("GetRecord", ID, DC),
    query("GetRecord", DC, ID),
    *(
        request
        for verb in ("ListIdentifiers", "ListRecords")
        for request in (
            query(verb, DC),
            query(verb, TOKEN),
            query(verb, DC, ("set", "text")),
            query(verb, DC, ("set", "text:html")),
            query(verb, ("from", "2024-01-01"), DC),
            query(verb, DC, ("until", "2024-01-01T00:00:00Z")),
            query(verb, DC, ("from", "2024-01-01"), ("until", "2024-01-01"), ("set", "a")),
        )
    ),
]


@pytest.mark.parametrize("pairs", VALID)
def test_valid_requests(pairs: Pairs) -> None:
    request = parse_request(pairs)
    assert request.verb == pairs[0][1]
    assert request.arguments == tuple(pairs[1:])
    assert request.attributes == tuple(pairs)


@pytest.mark.parametrize(
    "pairs",
    [
        [],
        [("identifier", "x")],
        [("Verb", "Identify")],
        [("verb", "")],
        [("verb", "identify")],
        [("verb", "Identify ")],
        [("verb", "ListAll")],
        [("verb", "Identify"), ("verb", "Identify")],
        [("verb", "Identify"), ("verb", "ListSets")],
        [("verb", "nastyVerb"), ("verb", "nastyVerb")],
        [("verb", "\x00")],
    ],
)
def test_bad_verb(pairs: Pairs) -> None:
    with pytest.raises(BadVerb):
        parse_request(pairs)


BAD_ARGUMENTS: list[Pairs] = [
    # not allowed for the verb
    query("Identify", ID),
    query("Identify", ("foo", "bar")),
    query("ListMetadataFormats", DC),
    query("ListMetadataFormats", TOKEN),
    query("ListSets", ("set", "a")),
    query("ListSets", DC),
    query("GetRecord", ID, DC, ("set", "a")),
    query("GetRecord", ID, DC, TOKEN),
    query("ListIdentifiers", DC, ID),
    query("ListRecords", DC, ("From", "2024-01-01")),
    # required but missing
    query("GetRecord"),
    query("GetRecord", ID),
    query("GetRecord", DC),
    query("ListIdentifiers"),
    query("ListRecords"),
    query("ListRecords", ("from", "2024-01-01")),
    query("ListIdentifiers", ("set", "a")),
    # repeated
    query("ListMetadataFormats", ID, ID),
    query("GetRecord", ID, DC, DC),
    query("GetRecord", ID, DC, ("metadataPrefix", "other")),
    query("ListRecords", DC, ("set", "a"), ("set", "b")),
    query("ListRecords", DC, ("from", "2024-01-01"), ("from", "2024-01-01")),
    query("ListSets", TOKEN, TOKEN),
    # the exclusive resumptionToken beside other arguments
    query("ListRecords", TOKEN, DC),
    query("ListIdentifiers", DC, TOKEN),
    query("ListIdentifiers", TOKEN, ("from", "2024-01-01")),
    query("ListRecords", TOKEN, ("set", "a")),
    query("ListRecords", TOKEN, ("until", "2024-01-01")),
    # empty values: present, and illegal
    query("ListMetadataFormats", ("identifier", "")),
    query("GetRecord", ("identifier", ""), DC),
    query("GetRecord", ID, ("metadataPrefix", "")),
    query("ListRecords", DC, ("set", "")),
    query("ListRecords", DC, ("from", "")),
    query("ListRecords", DC, ("until", "")),
    query("ListRecords", ("resumptionToken", "")),
    query("ListSets", ("resumptionToken", "")),
    # illegal syntax of metadataPrefix and set (§3.4; the schema's setSpecType)
    query("ListRecords", ("metadataPrefix", "oai dc")),
    query("GetRecord", ID, ("metadataPrefix", "oai/dc")),
    query("ListRecords", DC, ("set", "a:")),
    query("ListRecords", DC, ("set", ":a")),
    query("ListRecords", DC, ("set", "a::b")),
    query("ListRecords", DC, ("set", "image/svg")),
    # characters that cannot be echoed in XML
    query("ListMetadataFormats", ("identifier", "a\x00b")),
    query("GetRecord", ("identifier", "a\x1bb"), DC),
    query("ListMetadataFormats", ("identifier", "\ufffe")),
    query("ListMetadataFormats", ("identifier", "\ud800")),
]


@pytest.mark.parametrize("pairs", BAD_ARGUMENTS)
def test_bad_argument(pairs: Pairs) -> None:
    with pytest.raises(BadArgument):
        parse_request(pairs)


@pytest.mark.parametrize(
    "value",
    [
        "2024-13-01",
        "2024-02-30",
        "2023-02-29",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:00.5Z",
        "2024-01-01T00:00:00+01:00",
        "2024-01-01T25:00:00Z",
        "2024-1-1",
        "20240101",
        "yesterday",
        "0000-01-01",
    ],
)
@pytest.mark.parametrize("name", ["from", "until"])
@pytest.mark.parametrize("verb", ["ListIdentifiers", "ListRecords"])
def test_bad_datestamps(verb: str, name: str, value: str) -> None:
    with pytest.raises(BadArgument):
        parse_request(query(verb, DC, (name, value)))


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("2024-01-01", "2024-01-02T00:00:00Z"),
        ("2024-01-01T00:00:00Z", "2024-01-02"),
    ],
)
def test_mixed_granularity(start: str, end: str) -> None:
    with pytest.raises(BadArgument, match="granularit"):
        parse_request(query("ListRecords", DC, ("from", start), ("until", end)))


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("2024-01-02", "2024-01-01"),
        ("2024-01-01T00:00:01Z", "2024-01-01T00:00:00Z"),
    ],
)
def test_from_after_until(start: str, end: str) -> None:
    with pytest.raises(BadArgument, match="later"):
        parse_request(query("ListIdentifiers", DC, ("from", start), ("until", end)))


@pytest.mark.parametrize(
    ("pairs", "bounds"),
    [
        (
            query("ListRecords", DC, ("from", "2024-01-01"), ("until", "2024-01-01")),
            (DAY_2024_01_01, DAY_2024_01_01 + 86399, "day"),
        ),
        (
            query("ListRecords", DC, ("until", "2024-01-01")),
            (None, DAY_2024_01_01 + 86399, "day"),
        ),
        (
            query("ListRecords", DC, ("from", "2024-01-01T00:00:00Z")),
            (DAY_2024_01_01, None, "seconds"),
        ),
        (
            query(
                "ListRecords",
                DC,
                ("until", "2024-01-01T00:00:00Z"),
                ("from", "2024-01-01T00:00:00Z"),
            ),
            (DAY_2024_01_01, DAY_2024_01_01, "seconds"),
        ),
        (query("ListRecords", DC), (None, None, None)),
    ],
)
def test_date_bounds(pairs: Pairs, bounds: tuple[int | None, int | None, str | None]) -> None:
    request = parse_request(pairs)
    assert (request.from_, request.until, request.granularity) == bounds


def test_fields() -> None:
    pairs = query("ListRecords", ("set", "text:html"), DC, ("from", "2024-01-01"))
    assert parse_request(pairs) == OAIRequest(
        verb="ListRecords",
        metadata_prefix="oai_dc",
        set_spec="text:html",
        from_=DAY_2024_01_01,
        granularity="day",
        arguments=(("set", "text:html"), DC, ("from", "2024-01-01")),
    )
    assert parse_request(query("ListSets", TOKEN)).resumption_token == "abc"
    assert parse_request(query("GetRecord", ID, DC)).identifier == ID[1]


def test_verb_may_come_anywhere() -> None:
    request = parse_request([ID, ("verb", "GetRecord"), DC])
    assert request.arguments == (ID, DC)
    assert request.attributes == (("verb", "GetRecord"), ID, DC)


@pytest.mark.parametrize(
    "pairs",
    [
        query("GetRecord", ID, ("metadataPrefix", "marc")),
        query("ListRecords", ("metadataPrefix", "marc")),
        query("ListIdentifiers", ("metadataPrefix", "marc"), ("set", "a")),
    ],
)
def test_unknown_prefix(pairs: Pairs) -> None:
    with pytest.raises(CannotDisseminateFormat):
        parse_request(pairs, known_prefixes={"oai_dc"})
    assert parse_request(pairs).metadata_prefix == "marc"


@pytest.mark.parametrize(
    "pairs",
    [
        query("ListIdentifiers", ("metadataPrefix", "marc"), ("from", "2024-13-01")),
        query("GetRecord", ("metadataPrefix", "marc")),
        query("ListRecords", ("metadataPrefix", "marc"), ("bogus", "1")),
    ],
)
def test_bad_argument_wins_over_unknown_prefix(pairs: Pairs) -> None:
    with pytest.raises(BadArgument):
        parse_request(pairs, known_prefixes={"oai_dc"})


def test_known_prefix_and_token_requests() -> None:
    assert parse_request(query("GetRecord", ID, DC), known_prefixes=["oai_dc"])
    assert parse_request(query("ListRecords", TOKEN), known_prefixes=[])
    assert parse_request(query("Identify"), known_prefixes=[])


def test_too_many_arguments() -> None:
    with pytest.raises(BadArgument):
        parse_request(query("Identify", *[(f"k{i}", "v") for i in range(MAX_ARGUMENTS)]))


@pytest.mark.parametrize(
    "pairs",
    [
        [("verb", "Identify")] * (MAX_ARGUMENTS + 1),
        [("k", "v")] * (MAX_ARGUMENTS + 1),
        [("verb", "Nonsense"), *[("k", "v")] * MAX_ARGUMENTS],
    ],
    ids=["repeated", "missing", "illegal"],
)
def test_a_bad_verb_is_bad_verb_however_many_arguments(pairs: Pairs) -> None:
    """Found by the fuzz: past MAX_ARGUMENTS pairs a missing, repeated or illegal verb was
    badArgument; §3.6 makes each of them badVerb."""
    with pytest.raises(BadVerb):
        parse_request(pairs)


@pytest.mark.parametrize(
    ("pairs", "ok"),
    [
        (query("ListMetadataFormats", ("identifier", "x" * MAX_VALUE_LENGTH)), True),
        (query("ListMetadataFormats", ("identifier", "x" * (MAX_VALUE_LENGTH + 1))), False),
        (query("ListRecords", ("metadataPrefix", "x" * (MAX_VALUE_LENGTH + 1))), False),
        (query("ListRecords", ("resumptionToken", "x" * MAX_TOKEN_LENGTH)), True),
        (query("ListRecords", ("resumptionToken", "x" * (MAX_TOKEN_LENGTH + 1))), False),
    ],
)
def test_value_length(pairs: Pairs, ok: bool) -> None:
    if ok:
        parse_request(pairs)
    else:
        with pytest.raises(BadArgument):
            parse_request(pairs)


def test_error_messages_are_safe_to_render() -> None:
    nasty = "\x00<&>" + "é" * 100
    for pairs in ([("verb", nasty)], query("Identify", (nasty, "v"))):
        with pytest.raises(OAIError) as caught:
            parse_request(pairs)
        assert caught.value.message.isascii()
        assert caught.value.message.isprintable()
        assert len(caught.value.message) < 200


def test_error_classes_echo() -> None:
    assert not BadVerb.echo_arguments
    assert not BadArgument.echo_arguments
    assert CannotDisseminateFormat.echo_arguments
    assert (BadVerb.code, BadArgument.code) == ("badVerb", "badArgument")


@pytest.mark.parametrize(
    ("pairs", "error", "echo"),
    [
        ([("verb", "nastyVerb")], BadVerb(), ()),
        (query("Identify", ID), BadArgument(), ()),
        (query("GetRecord", ID, DC), IdDoesNotExist(), (("verb", "GetRecord"), ID, DC)),
        ([DC, ("verb", "ListRecords")], CannotDisseminateFormat(), (("verb", "ListRecords"), DC)),
        # An error claiming the request was fine cannot smuggle bad values into the echo.
        (query("GetRecord", ("identifier", "\x00"), DC), IdDoesNotExist(), ()),
    ],
)
def test_echo_attributes(pairs: Pairs, error: OAIError, echo: tuple[tuple[str, str], ...]) -> None:
    assert echo_attributes(pairs, error) == echo


NAMES = st.sampled_from(["verb", *sorted({n for s in SIGNATURES.values() for n in s.allowed})])
VALUES = st.one_of(
    st.sampled_from([*SIGNATURES, "oai_dc", "2024-01-01", "2024-01-01T00:00:00Z", "a:b", ""]),
    st.text(max_size=12),
)
PAIRS = st.lists(st.tuples(st.one_of(NAMES, st.text(max_size=8)), VALUES), max_size=8)


@given(PAIRS, st.none() | st.frozensets(st.sampled_from(["oai_dc", "a", "b"])))
def test_parse_raises_only_oai_errors(pairs: Pairs, known: frozenset[str] | None) -> None:
    try:
        request = parse_request(pairs, known_prefixes=known)
    except OAIError as error:
        echo = echo_attributes(pairs, error)
        assert not echo or echo == parse_request(pairs).attributes
        return
    assert request.verb in SIGNATURES
    assert sorted(request.attributes) == sorted(pairs)
    if request.from_ is not None and request.until is not None:
        assert request.from_ <= request.until


@given(st.lists(st.tuples(st.text(), st.text()), max_size=30))
def test_parse_raises_only_oai_errors_on_any_text(pairs: Pairs) -> None:
    with contextlib.suppress(OAIError):
        parse_request(pairs)


@pytest.mark.parametrize("identifier", [":", "%zz", "http://h/%"])
def test_an_identifier_that_is_no_uri_is_bad_argument(identifier: str) -> None:
    """identifierType is xs:anyURI: echoed in <request>, such a value made the response
    schema-invalid (found by the fuzz: ``identifier=:``)."""
    with pytest.raises(BadArgument, match="identifier"):
        parse_request([("verb", "ListMetadataFormats"), ("identifier", identifier)])
