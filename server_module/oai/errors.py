"""The OAI-PMH error conditions (§3.6), one exception class per error code.

Every error the provider can answer with is an :class:`OAIError`; the class carries the
protocol ``code`` and whether the response's ``<request>`` element may echo the request's
arguments (§3.2: after ``badVerb`` and ``badArgument`` it must carry the base URL only).
Grouped by what the harvester can do about each::

    OAIError                      base: ``code``, ``echo_arguments``, a human ``message``
    ├── the request is malformed: fix it (no arguments echoed)
    │   ├── BadVerb               verb missing, repeated or not one of the six
    │   └── BadArgument           illegal, missing, repeated or ill-formed argument
    ├── the request is well formed but cannot be answered
    │   ├── BadResumptionToken    invalid, tampered or expired token: restart the list
    │   ├── CannotDisseminateFormat  metadataPrefix not offered (by the item or at all)
    │   ├── IdDoesNotExist        identifier unknown or illegal in this repository
    │   └── NoSetHierarchy        the repository does not support sets
    └── the answer is empty: not a failure
        ├── NoRecordsMatch        from/until/set/metadataPrefix select nothing
        └── NoMetadataFormats     no format is available for the item
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "BadArgument",
    "BadResumptionToken",
    "BadVerb",
    "CannotDisseminateFormat",
    "IdDoesNotExist",
    "NoMetadataFormats",
    "NoRecordsMatch",
    "NoSetHierarchy",
    "OAIError",
]


# The human message of each code when the raiser gives none (§3.6 lists the conditions).
_MESSAGES = {
    "badArgument": "Illegal, missing or repeated argument",
    "badResumptionToken": "The resumptionToken is invalid or expired",
    "badVerb": "Illegal OAI verb",
    "cannotDisseminateFormat": "The metadata format is not supported",
    "idDoesNotExist": "The identifier is unknown or illegal in this repository",
    "noRecordsMatch": "No records match the request",
    "noMetadataFormats": "No metadata formats are available for the item",
    "noSetHierarchy": "This repository does not support sets",
}


class OAIError(Exception):
    """An OAI-PMH error condition, rendered as ``<error code="...">message</error>``.

    A subclass's ``code`` is its name with a small first letter, as the protocol spells it.

    >>> error = BadVerb()
    >>> error.code, error.echo_arguments, error.message
    ('badVerb', False, 'Illegal OAI verb')
    >>> IdDoesNotExist("no such item").message
    'no such item'
    """

    code: ClassVar[str] = ""
    echo_arguments: ClassVar[bool] = True
    default_message: ClassVar[str] = "OAI-PMH error"

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.code = cls.__name__[0].lower() + cls.__name__[1:]
        cls.default_message = _MESSAGES[cls.code]

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class BadArgument(OAIError):
    """Illegal, missing or repeated arguments, or values of illegal syntax."""

    echo_arguments = False


class BadResumptionToken(OAIError):
    """The resumptionToken is invalid or expired."""


class BadVerb(OAIError):
    """The verb is missing, repeated or not an OAI-PMH verb."""

    echo_arguments = False


class CannotDisseminateFormat(OAIError):
    """The metadataPrefix is not supported by the item or by the repository."""


class IdDoesNotExist(OAIError):
    """The identifier is unknown or illegal in this repository."""


class NoRecordsMatch(OAIError):
    """The selective-harvesting arguments result in an empty list."""


class NoMetadataFormats(OAIError):
    """No metadata formats are available for the item."""


class NoSetHierarchy(OAIError):
    """The repository does not support sets."""
