"""The provider fuzz's oracle: what an answer to an OAI-PMH request must be, decided from the
request alone and a corpus read from the repository beforehand (``tests/fuzz_requests.py``
draws the requests; ``tests/test_provider_fuzz.py`` and ``bench/fuzz.py`` run them).

The oracle reads each pair as the spec's parameters (percent-decoded, UTF-8, a byte that is
not UTF-8 kept as its ``%XX`` text) and knows, without asking the provider, which outcomes
§3.6 and §4 allow: ``badVerb`` exactly when the verb is missing, repeated or unknown;
``badArgument`` exactly when an argument is foreign, repeated, missing, empty or of illegal
syntax; otherwise only the value-dependent codes the verb lists, or none, as the corpus of
identifiers and tokens decides. Every answer must be HTTP 200, ``text/xml``, valid against the
official schemas, echo the request (§3.2) and carry the verb's element when it is no error.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import unquote_to_bytes

from lxml import etree

from server_module.oai.request import MAX_ARGUMENTS, MAX_VALUE_LENGTH
from server_module.oai.tokens import MAX_TOKEN_LENGTH
from server_module.settings import ProviderSettings
from tests.schemas import assert_valid

OAI = "{http://www.openarchives.org/OAI/2.0/}"
Pairs = list[tuple[str, str]]

#: §4: each verb's arguments and the error codes it may answer with besides badVerb.
REQUIRED = {
    "GetRecord": {"identifier", "metadataPrefix"},
    "Identify": set(),
    "ListIdentifiers": {"metadataPrefix"},
    "ListMetadataFormats": set(),
    "ListRecords": {"metadataPrefix"},
    "ListSets": set(),
}
OPTIONAL = {
    "GetRecord": set(),
    "Identify": set(),
    "ListIdentifiers": {"from", "until", "set", "resumptionToken"},
    "ListMetadataFormats": {"identifier"},
    "ListRecords": {"from", "until", "set", "resumptionToken"},
    "ListSets": {"resumptionToken"},
}
ALLOWED_CODES = {
    "GetRecord": {"badArgument", "cannotDisseminateFormat", "idDoesNotExist"},
    "Identify": {"badArgument"},
    "ListIdentifiers": {
        "badArgument", "badResumptionToken", "cannotDisseminateFormat", "noRecordsMatch",
        "noSetHierarchy",
    },
    "ListMetadataFormats": {"badArgument", "idDoesNotExist", "noMetadataFormats"},
    "ListRecords": {
        "badArgument", "badResumptionToken", "cannotDisseminateFormat", "noRecordsMatch",
        "noSetHierarchy",
    },
    "ListSets": {"badArgument", "badResumptionToken", "noSetHierarchy"},
}  # fmt: skip
VERBS = sorted(REQUIRED)
#: A larger query or body is refused whole, with badArgument, before any argument is read.
MAX_REQUEST_BYTES: int = ProviderSettings.__dataclass_fields__["max_request_bytes"].default
# OAI-PMH.xsd's metadataPrefixType and setSpecType.
_UNRESERVED = r"[A-Za-z0-9\-_.!~*'()]+"
_PREFIX = re.compile(_UNRESERVED)
_SET_SPEC = re.compile(rf"{_UNRESERVED}(?::{_UNRESERVED})*")
_DATESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2}):([0-9]{2}):([0-9]{2})Z)?")
_ANY_URI = etree.XMLSchema(
    etree.fromstring(
        b'<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
        b'<xs:element name="u" type="xs:anyURI"/></xs:schema>'
    )
)
_XML_CHAR = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")


@dataclass(frozen=True)
class Corpus:
    """What the fuzz knows of the repository: its identifiers, formats, sets and the tokens
    it issued (verb, token), all read from it through the protocol before the fuzz starts."""

    identifiers: frozenset[str]
    prefixes: tuple[str, ...]
    sets: tuple[str, ...]
    tokens: tuple[tuple[str, str], ...]

    def __repr__(self) -> str:  # hypothesis prints it with every failing example
        return f"Corpus({len(self.identifiers)} identifiers, {len(self.tokens)} tokens)"


@dataclass(frozen=True)
class Wire:
    """One request as sent: the method, the raw query and the raw form body (POST only)."""

    method: str
    query: bytes
    body: bytes | None

    def pairs(self) -> Pairs:
        """The arguments as the spec reads them: the body's, then the query's."""
        return _decode(self.body or b"") + _decode(self.query)


# -- the oracle ----------------------------------------------------------------------------


def expected(pairs: Pairs, corpus: Corpus) -> frozenset[str | None]:
    """The outcomes (an error code, or None for an answer) §3.6 and §4 allow for ``pairs``."""
    verbs = [value for name, value in pairs if name == "verb"]
    if len(verbs) != 1 or verbs[0] not in REQUIRED:
        return frozenset({"badVerb"})
    verb = verbs[0]
    args = [(name, value) for name, value in pairs if name != "verb"]
    if len(pairs) > MAX_ARGUMENTS or not _legal(verb, args):
        return frozenset({"badArgument"})
    return _outcomes(verb, dict(args), corpus)


def check(status: int, content_type: str, body: bytes, wire: Wire, corpus: Corpus) -> str:
    """Assert that one answer obeys the oracle; return its outcome ("ok" or the error code)."""
    assert status == 200, f"HTTP {status} for {wire!r}: {body[:300]!r}"
    assert content_type == "text/xml; charset=UTF-8", f"{content_type!r} for {wire!r}"
    try:
        root = assert_valid(body)
    except (AssertionError, etree.XMLSyntaxError) as error:
        raise AssertionError(f"{error} for {wire!r}: {body[:600]!r}") from None
    pairs = wire.pairs()
    codes = [e.get("code") for e in root.iterfind(f"{OAI}error")]
    outcome = codes[0] if codes else None
    oversized = max(len(wire.query), len(wire.body or b"")) > MAX_REQUEST_BYTES
    allowed = frozenset({"badArgument"}) if oversized else expected(pairs, corpus)
    assert set(codes or [None]) <= allowed, f"{codes} not in {sorted(map(str, allowed))}: {pairs!r}"
    attributes = dict(root.find(f"{OAI}request").attrib)
    if outcome in ("badVerb", "badArgument"):
        assert attributes == {}, f"{outcome} echoed {attributes!r}"
    else:
        assert attributes == dict(pairs), f"echoed {attributes!r} for {pairs!r}"
    if outcome is None:
        verb = dict(pairs)["verb"]
        assert root.find(f"{OAI}{verb}") is not None, f"no {verb} element for {pairs!r}"
    return outcome or "ok"


def _legal(verb: str, args: Pairs) -> bool:
    """§3.6 badArgument: every argument the verb's, unrepeated, sufficient, well formed."""
    counts = Counter(name for name, _ in args)
    names = set(counts)
    if not names <= REQUIRED[verb] | OPTIONAL[verb] or any(n > 1 for n in counts.values()):
        return False
    if "resumptionToken" in names:
        ok_shape = names == {"resumptionToken"}
    else:
        ok_shape = REQUIRED[verb] <= names
    values = dict(args)
    return ok_shape and all(_value_ok(n, v) for n, v in args) and _dates_ok(values)


def _value_ok(name: str, value: str) -> bool:
    limit = MAX_TOKEN_LENGTH if name == "resumptionToken" else MAX_VALUE_LENGTH
    if not value or len(value) > limit or not _XML_CHAR.fullmatch(value):
        return False
    if name == "metadataPrefix":
        return bool(_PREFIX.fullmatch(value))
    if name == "set":
        return bool(_SET_SPEC.fullmatch(value))
    if name == "identifier":  # identifierType is xs:anyURI: libxml2's own reading decides
        return _any_uri(value)
    if name in ("from", "until"):
        return _datestamp(value) is not None
    return True


def _any_uri(value: str) -> bool:
    element = etree.Element("u")
    element.text = value
    return bool(_ANY_URI.validate(element))


def _datestamp(text: str) -> tuple[datetime, datetime] | None:
    """The first and last second a UTCdatetime (§3.3.1) covers, or None if it is not one."""
    match = _DATESTAMP.fullmatch(text)
    if match is None:
        return None
    parts = [int(p) for p in match.groups() if p is not None]
    try:
        start = datetime(*parts)
        end = start if len(parts) == 6 else start.replace(hour=23, minute=59, second=59)
    except ValueError:
        return None
    return start, end


def _dates_ok(values: dict[str, str]) -> bool:
    if "from" not in values or "until" not in values:
        return True
    start, until = _datestamp(values["from"]), _datestamp(values["until"])
    assert start is not None and until is not None
    same = len(values["from"]) == len(values["until"])
    return same and start[0] <= until[1]


def _outcomes(verb: str, values: dict[str, str], corpus: Corpus) -> frozenset[str | None]:
    """The value-dependent outcomes of a request whose arguments are legal."""
    token = values.get("resumptionToken")
    if token is not None:
        valid = (verb, token) in corpus.tokens
        return frozenset({None} if valid else {"badResumptionToken"})
    known_id = values.get("identifier") in corpus.identifiers
    known_prefix = values.get("metadataPrefix") in corpus.prefixes
    if verb == "GetRecord":
        if known_id and known_prefix:
            return frozenset({None})
        wrong = set() if known_id else {"idDoesNotExist"}
        return frozenset(wrong | (set() if known_prefix else {"cannotDisseminateFormat"}))
    if verb == "ListMetadataFormats":
        return frozenset({None} if "identifier" not in values or known_id else {"idDoesNotExist"})
    if verb in ("ListIdentifiers", "ListRecords"):
        if not known_prefix:
            return frozenset({"cannotDisseminateFormat"})
        return frozenset({None, "noRecordsMatch"})
    return frozenset({None})  # Identify, ListSets of a repository with files


def _decode(raw: bytes) -> Pairs:
    """``application/x-www-form-urlencoded`` pairs (blank values kept) as the spec reads them."""
    pairs = []
    for field in raw.split(b"&"):
        if not field:
            continue
        name, _, value = field.partition(b"=")
        pairs.append((_text(name), _text(value)))
    return pairs


def _text(spelled: bytes) -> str:
    """Percent-decoded UTF-8; each byte that is not UTF-8 stays as its ``%XX`` spelling."""
    raw = unquote_to_bytes(spelled.replace(b"+", b" "))
    out, i = [], 0
    while i < len(raw):
        try:
            out.append(raw[i:].decode("utf-8"))
            break
        except UnicodeDecodeError as error:
            out.append(raw[i : i + error.start].decode("utf-8"))
            out.extend(f"%{b:02X}" for b in raw[i + error.start : i + error.end])
            i += error.end
    return "".join(out)
