"""The signed resumption-token codec (§3.5): round trips, tampering, expiry."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server_module.oai.errors import BadResumptionToken
from server_module.oai.request import parse_request
from server_module.oai.tokens import MAX_TOKEN_LENGTH, ListState, TokenCodec

SECRET = b"0123456789abcdef0123456789abcdef"
NOW = 1_700_000_000

STATE = ListState(
    verb="ListRecords",
    metadata_prefix="oai_dc",
    set_spec="text:html",
    from_=1_600_000_000,
    until=NOW,
    after=(1_650_000_000, "http://example.org/a%20b.html"),
    cursor=100,
    total=175,
    issued=NOW,
)


class Clock:
    """A settable clock for expiry tests."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def codec(now: float = NOW, ttl: int = 86400, secret: bytes = SECRET) -> TokenCodec:
    return TokenCodec(secret, ttl=ttl, clock=Clock(now))


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def signed(body: bytes, secret: bytes = SECRET) -> str:
    """A token over ``body`` with a valid tag, as if the secret had signed it."""
    return b64(body + hmac.new(secret, body, hashlib.sha256).digest()[:16])


def test_round_trip() -> None:
    token = codec().encode(STATE)
    assert codec().decode(token) == STATE
    assert codec().decode(token, verb="ListRecords") == STATE


def test_token_is_compact_and_url_safe() -> None:
    token = codec().encode(STATE)
    assert len(token) < 200
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_survives_restart() -> None:
    """A new codec with the same secret (a restarted process) reads old tokens."""
    assert TokenCodec(SECRET, clock=Clock(NOW)).decode(codec().encode(STATE)) == STATE


def test_other_secret_rejects() -> None:
    token = codec().encode(STATE)
    with pytest.raises(BadResumptionToken, match="not issued by this repository"):
        codec(secret=b"another secret").decode(token)


def test_wrong_verb() -> None:
    token = codec().encode(STATE)
    with pytest.raises(BadResumptionToken, match="ListRecords"):
        codec().decode(token, verb="ListIdentifiers")


def test_expiry_with_injected_clock() -> None:
    clock = Clock(NOW)
    tokens = TokenCodec(SECRET, ttl=600, clock=clock)
    token = tokens.encode(STATE)
    assert tokens.expires(STATE) == NOW + 600
    clock.now = NOW + 600
    assert tokens.decode(token) == STATE
    clock.now = NOW + 600.5
    with pytest.raises(BadResumptionToken, match="expired at 2023-11-14T22:23:20Z"):
        tokens.decode(token)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "not base64url"),
        ("abc", "truncated"),
        ("!!!!", "not base64url"),
        ("abc=", "not base64url"),
        ("ab cd", "not base64url"),
        ("A" * 21, "not base64url|truncated"),
        ("A" * (MAX_TOKEN_LENGTH + 1), "longer than"),
        ("é" * 40, "not base64url"),
        (b64(b"\x01" + b"x" * 40), "not issued by this repository"),
        (b64(b"\x02" + b"x" * 40), "unknown version"),
        (b64(b"\x00" * 20), "unknown version"),
        (signed(b"\x02[]"), "unknown version"),
        (signed(b"\x01not json"), "malformed"),
        (signed(b"\x01[]"), "malformed"),
        (signed(b"\x01\xff\xfe"), "malformed"),
        (signed(b'\x01["X",null,null,null,1,null,null,0,0,1]'), "malformed"),
        (signed(b'\x01["R",null,null,null,"1",null,null,0,0,1]'), "malformed"),
        (signed(b'\x01["R",null,null,null,1.5,null,null,0,0,1]'), "malformed"),
        (signed(b'\x01["R",null,null,null,1,5,null,0,0,1]'), "malformed"),
        (signed(b'\x01["R",null,null,null,1,null,null,0,0,true]'), "malformed"),
        (signed(b'\x01["R",[],null,null,1,null,null,0,0,1]'), "malformed"),
        (signed(b"\x01[[],null,null,null,1,null,null,0,0,1]"), "malformed"),
        (signed(b'\x01{"v":"R"}'), "malformed"),
    ],
)
def test_rejects(token: str, message: str) -> None:
    with pytest.raises(BadResumptionToken, match=message):
        codec().decode(token)


def test_non_canonical_base64_is_rejected() -> None:
    """Unused trailing bits must not give a second spelling of a valid token."""
    token = codec().encode(STATE)
    last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for char in last:
        variant = token[:-1] + char
        if variant != token:
            with pytest.raises(BadResumptionToken):
                codec().decode(variant)


def test_signed_well_formed_payload_decodes() -> None:
    """The wire format is the documented one: version 1, a JSON array, a 16-byte tag."""
    fields = ["I", "oai_dc", None, None, NOW, None, None, 0, 3, NOW]
    state = codec().decode(signed(b"\x01" + json.dumps(fields).encode()))
    assert (state.verb, state.after, state.total) == ("ListIdentifiers", None, 3)


def test_encode_rejects_non_list_verb_and_oversize() -> None:
    with pytest.raises(ValueError):
        codec().encode(dataclasses.replace(STATE, verb="GetRecord"))
    with pytest.raises(ValueError):
        codec().encode(dataclasses.replace(STATE, after=(0, "x" * MAX_TOKEN_LENGTH)))


def test_empty_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        TokenCodec(b"")


def test_from_request_bounds_the_list_at_its_start() -> None:
    later = parse_request(
        [("verb", "ListIdentifiers"), ("metadataPrefix", "oai_dc"), ("until", "2100-01-01")]
    )
    state = ListState.from_request(later, now=NOW)
    assert (state.until, state.after, state.cursor, state.issued) == (NOW, None, 0, NOW)
    earlier = parse_request(
        [("verb", "ListRecords"), ("metadataPrefix", "a"), ("until", "2001-01-01")]
    )
    assert ListState.from_request(earlier, now=NOW).until == 978393599
    sets = ListState.from_request(parse_request([("verb", "ListSets")]), now=NOW, total=4)
    assert (sets.metadata_prefix, sets.until, sets.total) == (None, NOW, 4)


def test_advance() -> None:
    first = ListState.from_request(
        parse_request([("verb", "ListRecords"), ("metadataPrefix", "oai_dc")]), now=NOW, total=9
    )
    second = first.advance((NOW - 5, "http://example.org/x"), 4, now=NOW + 60)
    assert (second.after, second.cursor, second.total, second.issued) == (
        (NOW - 5, "http://example.org/x"),
        4,
        9,
        NOW + 60,
    )
    assert codec(NOW + 60).decode(codec().encode(second)) == second


EPOCHS = st.integers(-(2**62), 2**62)
TEXTS = st.text(max_size=100)
STATES = st.builds(
    ListState,
    verb=st.sampled_from(["ListIdentifiers", "ListRecords", "ListSets"]),
    metadata_prefix=st.none() | TEXTS,
    set_spec=st.none() | TEXTS,
    from_=st.none() | EPOCHS,
    until=EPOCHS,
    after=st.none() | st.tuples(EPOCHS, st.text(max_size=300)),
    cursor=st.integers(-1, 2**40),
    total=st.integers(-1, 2**40),
    issued=st.integers(0, NOW),
)


@given(STATES)
def test_round_trip_any_state(state: ListState) -> None:
    assert codec(now=0).decode(codec().encode(state)) == state


@given(STATES, st.data())
def test_any_single_character_change_is_rejected(state: ListState, data: st.DataObject) -> None:
    token = codec().encode(state)
    index = data.draw(st.integers(0, len(token) - 1), label="index")
    char = data.draw(st.characters().filter(lambda c: c != token[index]), label="char")
    with pytest.raises(BadResumptionToken):
        codec(now=0).decode(token[:index] + char + token[index + 1 :])


@given(STATES, st.data())
def test_truncation_and_extension_are_rejected(state: ListState, data: st.DataObject) -> None:
    token = codec().encode(state)
    cut = data.draw(st.integers(0, len(token) - 1), label="cut")
    with pytest.raises(BadResumptionToken):
        codec(now=0).decode(token[:cut])
    extra = data.draw(st.text(min_size=1, max_size=4), label="extra")
    with pytest.raises(BadResumptionToken):
        codec(now=0).decode(token + extra)


@given(st.text(max_size=300) | st.text(alphabet="AQgw-_09azAZ", max_size=300))
def test_arbitrary_text_raises_only_bad_resumption_token(text: str) -> None:
    with pytest.raises(BadResumptionToken):
        codec().decode(text)


@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_bad_resumption_token(raw: bytes) -> None:
    with pytest.raises(BadResumptionToken):
        codec().decode(b64(raw))
