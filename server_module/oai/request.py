"""An OAI-PMH request: the received arguments checked into a value, or an OAI error.

The arguments arrive as ``key=value`` pairs from a GET query or a POST form body (§3.1.1),
in order and possibly repeated; :func:`decode_arguments` reads them from the bytes received.
:func:`parse_request` applies the rules of §3.6 and §4:

* ``verb`` missing, repeated or not one of the six verbs: ``badVerb``;
* an argument repeated, not allowed for the verb, required but missing, empty, of illegal
  syntax, or given beside the exclusive ``resumptionToken``: ``badArgument``;
* ``from``/``until`` not a UTCdatetime (§3.3.1), of different granularities, or ``from``
  after ``until``: ``badArgument``;
* a well-formed ``metadataPrefix`` the repository does not offer: ``cannotDisseminateFormat``.

Values are also checked for what the response will echo: the ``<request>`` element repeats
them as attributes (§3.2), so they must be XML characters, and ``metadataPrefix`` and ``set``
must match the schema's ``metadataPrefixType`` and ``setSpecType``. Hostile input is bounded:
at most :data:`MAX_ARGUMENTS` pairs and :data:`MAX_VALUE_LENGTH` characters a value
(:data:`MAX_TOKEN_LENGTH` for a resumptionToken, which :mod:`server_module.oai.tokens`
also holds its tokens to). Nothing but an
:class:`~server_module.oai.errors.OAIError` is ever raised.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote_to_bytes

from coop_common.xmltext import has_invalid, is_any_uri
from server_module.oai.dates import DAY, DAY_SECONDS, Granularity, parse_datestamp
from server_module.oai.errors import BadArgument, BadVerb, CannotDisseminateFormat, OAIError

__all__ = [
    "LIST_VERBS",
    "MAX_ARGUMENTS",
    "MAX_TOKEN_LENGTH",
    "MAX_VALUE_LENGTH",
    "SIGNATURES",
    "OAIRequest",
    "Signature",
    "decode_arguments",
    "echo_attributes",
    "parse_request",
]

Pairs = Sequence[tuple[str, str]]

MAX_ARGUMENTS: Final = 20
MAX_VALUE_LENGTH: Final = 2048
MAX_TOKEN_LENGTH: Final = 4096

_UNRESERVED = r"[A-Za-z0-9\-_.!~*'()]+"
_METADATA_PREFIX = re.compile(_UNRESERVED)
_SET_SPEC = re.compile(rf"{_UNRESERVED}(?::{_UNRESERVED})*")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True, slots=True)
class Signature:
    """The arguments a verb takes besides ``verb`` (§4): required, optional, exclusive."""

    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    exclusive: str | None = None

    @property
    def allowed(self) -> frozenset[str]:
        exclusive = {self.exclusive} if self.exclusive else set()
        return self.required | self.optional | exclusive


_LIST = Signature(
    required=frozenset({"metadataPrefix"}),
    optional=frozenset({"from", "until", "set"}),
    exclusive="resumptionToken",
)

#: Each verb's arguments, after §4.1 to §4.6.
SIGNATURES: Final[Mapping[str, Signature]] = {
    "GetRecord": Signature(required=frozenset({"identifier", "metadataPrefix"})),
    "Identify": Signature(),
    "ListIdentifiers": _LIST,
    "ListMetadataFormats": Signature(optional=frozenset({"identifier"})),
    "ListRecords": _LIST,
    "ListSets": Signature(exclusive="resumptionToken"),
}

#: The verbs whose answers are lists, paged with resumption tokens (§3.5).
LIST_VERBS: Final = frozenset({"ListIdentifiers", "ListRecords", "ListSets"})


@dataclass(frozen=True, slots=True)
class OAIRequest:
    """A valid OAI-PMH request.

    ``from_`` and ``until`` are inclusive bounds in UTC epoch seconds; a day-granularity
    ``until`` already reaches the last second of its day. ``arguments`` are the received
    pairs other than ``verb``, verbatim and in order, for the ``<request>`` element.
    """

    verb: str
    identifier: str | None = None
    metadata_prefix: str | None = None
    set_spec: str | None = None
    from_: int | None = None
    until: int | None = None
    granularity: Granularity | None = None
    resumption_token: str | None = None
    arguments: tuple[tuple[str, str], ...] = ()

    @property
    def attributes(self) -> tuple[tuple[str, str], ...]:
        """The ``<request>`` attributes (§3.2): the verb, then the other arguments."""
        return (("verb", self.verb), *self.arguments)


def parse_request(pairs: Pairs, *, known_prefixes: Collection[str] | None = None) -> OAIRequest:
    """Check the received arguments into an :class:`OAIRequest`, or raise an OAI error.

    ``known_prefixes``, when given, are the metadataPrefixes the repository offers.

    >>> parse_request([("verb", "GetRecord"), ("identifier", "x"), ("metadataPrefix", "oai_dc")])
    ... # doctest: +NORMALIZE_WHITESPACE
    OAIRequest(verb='GetRecord', identifier='x', metadata_prefix='oai_dc', set_spec=None,
               from_=None, until=None, granularity=None, resumption_token=None,
               arguments=(('identifier', 'x'), ('metadataPrefix', 'oai_dc')))
    >>> parse_request([("verb", "ListSets"), ("set", "a")])
    Traceback (most recent call last):
    ...
    server_module.oai.errors.BadArgument: ListSets does not take the argument 'set'
    """
    verb = _verb(pairs)  # first: a bad verb is badVerb however many arguments come with it
    if len(pairs) > MAX_ARGUMENTS:
        raise BadArgument(f"The request has more than {MAX_ARGUMENTS} arguments")
    arguments = tuple(pair for pair in pairs if pair[0] != "verb")
    values = _check_names(verb, arguments)
    for name, value in arguments:
        _check_value(name, value)
    request = _build(verb, values, arguments)
    prefix = request.metadata_prefix
    if known_prefixes is not None and prefix is not None and prefix not in known_prefixes:
        raise CannotDisseminateFormat(f"The metadata format {prefix!r} is not supported")
    return request


def decode_arguments(received: bytes) -> list[tuple[str, str]]:
    """The ``application/x-www-form-urlencoded`` pairs in a query string or POST body, in
    order, repeats and blank values kept; a field without ``=`` has an empty value.

    Names and values are percent-decoded and read as UTF-8. A byte that is not UTF-8, raw or
    percent-encoded, stays as its ``%XX`` spelling (as the identifier of a file whose name
    is not UTF-8 has it), so no input fails to decode.

    >>> decode_arguments(b"verb=Get%52ecord&identifier=caf\\xe9&a+b=%C3%A9&x")
    [('verb', 'GetRecord'), ('identifier', 'caf%E9'), ('a b', 'é'), ('x', '')]
    """
    pairs = []
    for field in received.split(b"&"):
        if field:
            name, _, value = field.partition(b"=")
            pairs.append((_form_text(name), _form_text(value)))
    return pairs


def _form_text(spelled: bytes) -> str:
    text = unquote_to_bytes(spelled.replace(b"+", b" ")).decode("utf-8", "surrogateescape")
    return _ESCAPED_BYTE.sub(lambda m: f"%{ord(m[0]) - 0xDC00:02X}", text)


def echo_attributes(pairs: Pairs, error: OAIError) -> tuple[tuple[str, str], ...]:
    """The ``<request>`` attributes of an error response, when only the raw pairs are known.

    After ``badVerb`` and ``badArgument`` there are none (§3.2). After any other error the
    request was well formed, and it is echoed in full; pairs that do not parse are never
    echoed, so a value that could break the XML never reaches the renderer. When parsing
    succeeded, use :attr:`OAIRequest.attributes` instead.

    >>> pairs = [("verb", "GetRecord"), ("identifier", "x"), ("metadataPrefix", "nope")]
    >>> echo_attributes(pairs, CannotDisseminateFormat())
    (('verb', 'GetRecord'), ('identifier', 'x'), ('metadataPrefix', 'nope'))
    >>> echo_attributes([("verb", "Nonsense")], BadVerb())
    ()
    """
    if not error.echo_arguments:
        return ()
    try:
        return parse_request(pairs).attributes
    except OAIError:
        return ()


def _verb(pairs: Pairs) -> str:
    verbs = [value for name, value in pairs if name == "verb"]
    if not verbs:
        raise BadVerb("The verb argument is missing")
    if len(verbs) > 1:
        raise BadVerb("The verb argument is repeated")
    if verbs[0] not in SIGNATURES:
        raise BadVerb(f"Illegal OAI verb: {_show(verbs[0])}")
    return verbs[0]


def _check_names(verb: str, arguments: Pairs) -> dict[str, str]:
    """The arguments by name, once each is known to be allowed, unrepeated and sufficient."""
    signature = SIGNATURES[verb]
    counts = Counter(name for name, _ in arguments)
    for name, count in counts.items():
        if name not in signature.allowed:
            raise BadArgument(f"{verb} does not take the argument {_show(name)}")
        if count > 1:
            raise BadArgument(f"The argument {name!r} is repeated")
    if signature.exclusive in counts:
        if len(counts) > 1:
            raise BadArgument(f"{signature.exclusive} must be the only argument besides verb")
        return dict(arguments)
    missing = sorted(signature.required - counts.keys())
    if missing:
        raise BadArgument(f"{verb} requires the argument {missing[0]!r}")
    return dict(arguments)


def _check_value(name: str, value: str) -> None:
    limit = MAX_TOKEN_LENGTH if name == "resumptionToken" else MAX_VALUE_LENGTH
    if not value:
        raise BadArgument(f"The argument {name!r} is empty")
    if len(value) > limit:
        raise BadArgument(f"The argument {name!r} is longer than {limit} characters")
    if has_invalid(value):
        raise BadArgument(f"The argument {name!r} contains characters illegal in XML")
    if name == "metadataPrefix" and not _METADATA_PREFIX.fullmatch(value):
        raise BadArgument(f"Illegal metadataPrefix syntax: {_show(value)}")
    if name == "set" and not _SET_SPEC.fullmatch(value):
        raise BadArgument(f"Illegal setSpec syntax: {_show(value)}")
    if name == "identifier" and not is_any_uri(value):
        raise BadArgument(f"Illegal identifier syntax (not a URI): {_show(value)}")


def _build(verb: str, values: Mapping[str, str], arguments: Pairs) -> OAIRequest:
    from_, until, granularity = _date_range(values.get("from"), values.get("until"))
    return OAIRequest(
        verb=verb,
        identifier=values.get("identifier"),
        metadata_prefix=values.get("metadataPrefix"),
        set_spec=values.get("set"),
        from_=from_,
        until=until,
        granularity=granularity,
        resumption_token=values.get("resumptionToken"),
        arguments=tuple(arguments),
    )


def _date_range(
    from_text: str | None, until_text: str | None
) -> tuple[int | None, int | None, Granularity | None]:
    """Inclusive epoch bounds from ``from`` and ``until`` (§3.3.1), and their granularity."""
    start = _datestamp("from", from_text)
    end = _datestamp("until", until_text)
    if start and end and start[1] != end[1]:
        raise BadArgument("The from and until arguments have different granularities")
    granularity = (start or end or (None, None))[1]
    from_ = start[0] if start else None
    until = None
    if end:
        until = end[0] + DAY_SECONDS - 1 if end[1] == DAY else end[0]
    if from_ is not None and until is not None and from_ > until:
        raise BadArgument("The from argument is later than the until argument")
    return from_, until, granularity


def _datestamp(name: str, text: str | None) -> tuple[int, Granularity] | None:
    if text is None:
        return None
    try:
        return parse_datestamp(text)
    except ValueError:
        raise BadArgument(f"Illegal {name} datestamp: {_show(text)}") from None


def _show(text: str) -> str:
    """A short, printable-ASCII rendering of received text, safe inside an error message."""
    return ascii(text[:40]) + ("..." if len(text) > 40 else "")
