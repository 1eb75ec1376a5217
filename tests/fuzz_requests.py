"""The provider fuzz's requests: hypothesis strategies for OAI-PMH requests as sent, and the two
ways of sending them (the Flask test client, and a raw socket to a real server).

A request is drawn as argument pairs of bytes: the protocol's names and values (the six
verbs, the repository's identifiers, formats and sets, datestamps, tokens the provider
issued, and those tokens tampered, truncated, extended or made up), legal requests spoiled by
a dropped, repeated, changed or foreign argument or a second verb, and hostile text and bytes
that are not UTF-8. Each byte is then spelled raw, ``%XX`` or ``%xx`` (a space also as ``+``),
and the pairs go out as a GET query or a POST form body (some of them then in the query).
The oracle is ``tests/fuzz_oracle.py``.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from flask.testing import FlaskClient
from hypothesis import strategies as st
from lxml import etree

from server_module.oai.request import MAX_ARGUMENTS
from server_module.oai.tokens import MAX_TOKEN_LENGTH
from tests.fuzz_oracle import OAI, OPTIONAL, REQUIRED, VERBS, Corpus, Wire

RawPairs = list[tuple[bytes, bytes]]
NAMES = ["verb", "identifier", "metadataPrefix", "from", "until", "set", "resumptionToken"]
FORM = "application/x-www-form-urlencoded"
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_MUST_ESCAPE = frozenset(b"%&=+#; \t\r\n")


@cache
def wires(
    corpus: Corpus, *, wire_safe: bool = False, raw_high: bool = True
) -> st.SearchStrategy[Wire]:
    """Requests as sent. ``wire_safe`` leaves out the bytes an HTTP request line cannot carry
    raw (controls, whitespace), for a real socket; ``raw_high=False`` sends no byte above
    0x7F raw. Both are still sent percent-encoded."""
    spelling = Spelling(wire_safe, raw_high)
    return st.builds(
        _wire, st.sampled_from(["GET", "GET", "POST"]), argument_lists(corpus), st.data(),
        st.just(spelling),
    )  # fmt: skip


def _wire(method: str, pairs: RawPairs, data: st.DataObject, spelling: Spelling) -> Wire:
    spelled = [
        spelling(name, *data.draw(_STYLE)) + b"=" + spelling(value, *data.draw(_STYLE))
        for name, value in pairs
    ]
    if method == "GET":
        return Wire("GET", b"&".join(spelled), None)
    cut = data.draw(st.integers(0, len(spelled)))  # POST may carry some in the query too
    return Wire("POST", b"&".join(spelled[cut:]), b"&".join(spelled[:cut]))


_MODES = ("raw", "upper", "lower", "mixed")
_STYLE = st.tuples(st.sampled_from(_MODES), st.integers(0, 2**16))


@dataclass(frozen=True)
class Spelling:
    """How bytes go on the wire: each raw, ``%XX`` or ``%xx`` by the mode, or mixed at
    random by the seed (one draw a value: drawing each byte was most of the fuzz's time).
    A space is ``+`` raw, ``%20`` escaped; the form's own delimiters are always escaped."""

    wire_safe: bool
    raw_high: bool

    def __call__(self, raw: bytes, mode: str, seed: int) -> bytes:
        rng = random.Random(seed)
        out = []
        for b in raw:
            way = mode if mode != "mixed" else rng.choice(_MODES[:3])
            if way == "raw" and self._must_escape(b):
                way = "upper"
            if b == 0x20:
                out.append(b"+" if way == "raw" else b"%20")
            else:
                out.append(
                    bytes([b]) if way == "raw" else (b"%%%02X" if way == "upper" else b"%%%02x") % b
                )
        return b"".join(out)

    def _must_escape(self, b: int) -> bool:
        if b == 0x20:
            return False
        unsafe = self.wire_safe and (b < 0x21 or b == 0x7F or chr(b).isspace())
        return b in _MUST_ESCAPE or unsafe or (b > 0x7F and not self.raw_high)


@cache
def argument_lists(corpus: Corpus) -> st.SearchStrategy[RawPairs]:
    """Legal requests, legal requests spoiled, and pairs at random."""
    return st.one_of(
        legal_requests(corpus),
        legal_requests(corpus).flatmap(lambda pairs: _spoiled(pairs, corpus)),
        st.lists(st.tuples(names(), values(corpus)), max_size=6),
        st.lists(st.tuples(names(), _short_values()), min_size=MAX_ARGUMENTS - 1, max_size=24),
    )


@cache
def legal_requests(corpus: Corpus) -> st.SearchStrategy[RawPairs]:
    return st.sampled_from(VERBS).flatmap(lambda verb: _legal_for(verb, corpus))


@cache
def _legal_for(verb: str, corpus: Corpus) -> st.SearchStrategy[RawPairs]:
    with_token = st.just(("resumptionToken",)) if "resumptionToken" in OPTIONAL[verb] else None
    plain = sorted(OPTIONAL[verb] - {"resumptionToken"})
    subsets = st.lists(st.sampled_from(plain), unique=True) if plain else st.just([])
    chosen = subsets.map(lambda names: (*sorted(REQUIRED[verb]), *names))
    shapes = chosen if with_token is None else st.one_of(chosen, with_token)
    return shapes.flatmap(lambda shape: _filled(verb, shape, corpus)).flatmap(st.permutations)


@cache
def _filled(verb: str, shape: tuple[str, ...], corpus: Corpus) -> st.SearchStrategy[RawPairs]:
    verb_pair = st.just((b"verb", verb.encode()))
    parts = [st.tuples(st.just(n.encode()), _good_value(n, verb, corpus)) for n in shape]
    return st.tuples(verb_pair, *parts).map(list)


def _spoiled(pairs: RawPairs, corpus: Corpus) -> st.SearchStrategy[RawPairs]:
    """One of: an argument dropped, repeated, changed or added; the verb repeated."""
    index = st.integers(0, len(pairs) - 1)
    return st.one_of(
        index.map(lambda i: pairs[:i] + pairs[i + 1 :]),
        index.map(lambda i: [*pairs, pairs[i]]),
        st.tuples(index, values(corpus)).map(lambda t: _replace(pairs, *t)),
        st.tuples(names(), values(corpus)).map(lambda pair: [*pairs, pair]),
        st.sampled_from(VERBS).map(lambda verb: [*pairs, (b"verb", verb.encode())]),
    )


def _replace(pairs: RawPairs, i: int, value: bytes) -> RawPairs:
    return [*pairs[:i], (pairs[i][0], value), *pairs[i + 1 :]]


@cache
def names() -> st.SearchStrategy[bytes]:
    odd = st.sampled_from([b"Verb", b"VERB", b"metadataprefix", b"identifier ", b"", b"set[]"])
    return st.one_of(st.sampled_from([n.encode() for n in NAMES]), odd, _hostile())


@cache
def values(corpus: Corpus) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.sampled_from(NAMES).flatmap(lambda name: _good_value(name, "ListRecords", corpus)),
        st.sampled_from([v.encode() for v in VERBS] + [b"identify", b"ListIdentifiers "]),
        _tokens(corpus),
        _dates(),
        _hostile(),
    )


@cache
def _short_values() -> st.SearchStrategy[bytes]:
    """Values that keep a request of many arguments short enough for any request line."""
    words = [*VERBS, "oai_dc", "marc21", "2024-01-01", "", "x"]
    return st.sampled_from([w.encode() for w in words])


@cache
def _good_value(name: str, verb: str, corpus: Corpus) -> st.SearchStrategy[bytes]:
    """A value of the right kind for ``name``: usually legal, sometimes unknown."""
    if name == "identifier":
        known = st.sampled_from(sorted(corpus.identifiers)).map(str.encode)
        return st.one_of(known, known.map(lambda i: i + b"x"), st.just(b"urn:nowhere"))
    if name == "metadataPrefix":
        return st.sampled_from([*corpus.prefixes, "marc21"]).map(str.encode)
    if name == "set":
        return st.sampled_from([*corpus.sets, "text:nothing", "chemical"]).map(str.encode)
    if name in ("from", "until"):
        return _dates()
    if name == "resumptionToken":
        mine = [t for v, t in corpus.tokens if v == verb] or [t for _, t in corpus.tokens]
        return st.one_of(st.sampled_from(mine).map(str.encode), _tokens(corpus))
    return st.sampled_from(VERBS).map(str.encode)


@cache
def _dates() -> st.SearchStrategy[bytes]:
    moments = st.datetimes(datetime(1900, 1, 1), datetime(2100, 1, 1))
    day = moments.map(lambda d: d.strftime("%Y-%m-%d"))
    second = moments.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
    shapes = st.from_regex(
        r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9])?Z?)?\Z"
    )
    return st.one_of(day, second, shapes).map(str.encode)


@cache
def _tokens(corpus: Corpus) -> st.SearchStrategy[bytes]:
    """Tokens the provider issued, tampered, truncated, extended, or made up."""
    issued = st.sampled_from([t for _, t in corpus.tokens])

    def tamper(token: str, i: int, c: str) -> str:
        i %= len(token)
        return token[:i] + (c if c != token[i] else "A" if c != "A" else "B") + token[i + 1 :]

    tampered = st.builds(tamper, issued, st.integers(0, 10_000), st.sampled_from(_B64URL))
    truncated = st.tuples(issued, st.integers(0, 10_000)).map(lambda t: t[0][: t[1] % len(t[0])])
    extended = st.tuples(issued, st.text(_B64URL, min_size=1, max_size=4)).map("".join)
    made_up = st.text(_B64URL, min_size=1, max_size=200)
    long = st.integers(MAX_TOKEN_LENGTH - 2, MAX_TOKEN_LENGTH + 2).map(lambda n: "A" * n)
    return st.one_of(tampered, truncated, extended, made_up, long).map(str.encode)


@cache
def _hostile() -> st.SearchStrategy[bytes]:
    """Text of any character (XML-illegal ones included), and bytes that are not UTF-8."""
    text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40).map(str.encode)
    mixed = st.sampled_from(["<&\"'>", "]]>", "\x00", "\ufffe", "é", "%", "%zz", "+", "\U0001f600"])
    return st.one_of(text, st.binary(max_size=40), mixed.map(str.encode))


def read_corpus(get: Callable[[dict[str, str]], etree._Element]) -> Corpus:
    """Read the corpus from a provider: ``get(params)`` returns a parsed response document.
    Every page of two lists is walked, so the identifiers are all the repository's."""
    identifiers: set[str] = set()
    tokens: list[tuple[str, str]] = []
    for verb, prefix in (("ListIdentifiers", "oai_dc"), ("ListRecords", "oai_didl")):
        params: dict[str, str] = {"verb": verb, "metadataPrefix": prefix}
        for _page in range(1000):
            root = get(params)
            identifiers.update(e.text or "" for e in root.iter(f"{OAI}identifier"))
            token = root.findtext(f".//{OAI}resumptionToken")
            if not token:
                break
            tokens.append((verb, token))
            params = {"verb": verb, "resumptionToken": token}
    formats = get({"verb": "ListMetadataFormats"}).iter(f"{OAI}metadataPrefix")
    sets = get({"verb": "ListSets"}).iter(f"{OAI}setSpec")
    return Corpus(
        identifiers=frozenset(identifiers),
        prefixes=tuple(e.text or "" for e in formats),
        sets=tuple(e.text or "" for e in sets),
        tokens=tuple(tokens),
    )


# -- sending -------------------------------------------------------------------------------


def send_app(client: FlaskClient, wire: Wire, endpoint: str = "/oai") -> tuple[int, str, bytes]:
    """Through the WSGI app in process; the raw query goes in as PEP 3333's latin-1 text.
    The response is closed as a server would close it, which runs the read-ahead."""
    overrides = {"QUERY_STRING": wire.query.decode("latin-1")}
    if wire.body is None:
        response = client.get(endpoint, environ_overrides=overrides)
    else:
        response = client.post(
            endpoint, data=wire.body, content_type=FORM, environ_overrides=overrides
        )
    try:
        return response.status_code, response.headers.get("Content-Type", ""), response.data
    finally:
        response.close()


def send_socket(
    host: str, port: int, wire: Wire, endpoint: str = "/oai", timeout: float = 10.0
) -> tuple[int, str, bytes]:
    """Over a real socket, the query's bytes exactly as drawn (no client re-encodes them)."""
    target = endpoint.encode() + (b"?" + wire.query if wire.query else b"")
    head = [
        b"%s %s HTTP/1.1" % (wire.method.encode(), target),
        b"Host: %s:%d" % (host.encode(), port),
    ]
    head.append(b"Connection: close")
    if wire.body is not None:
        head += [b"Content-Type: " + FORM.encode(), b"Content-Length: %d" % len(wire.body)]
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + (wire.body or b""))
        # Nothing more to send: a server that drains an unread body until the end of the
        # stream (werkzeug's, after refusing one too large) sees it at once, not at our timeout.
        sock.shutdown(socket.SHUT_WR)
        data = _read_all(sock, time.monotonic() + timeout)
    status_line, _, rest = data.partition(b"\r\n")
    header_block, _, body = rest.partition(b"\r\n\r\n")
    headers = dict(
        (k.strip().lower(), v.strip())
        for k, _, v in (
            line.decode("latin-1").partition(":") for line in header_block.split(b"\r\n")
        )
    )
    return int(status_line.split()[1]), headers.get("content-type", ""), body


def _read_all(sock: socket.socket, deadline: float, limit: int = 64 << 20) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while time.monotonic() < deadline and size < limit:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
