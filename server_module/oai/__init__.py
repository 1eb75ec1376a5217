"""The sans-IO OAI-PMH 2.0 protocol core: requests, errors, datestamps, resumption tokens.

Nothing here touches the network, the filesystem or Flask: :func:`parse_request` turns the
received arguments into an :class:`OAIRequest` or raises an :class:`OAIError` (§3.6, §4),
:mod:`~server_module.oai.dates` handles UTCdatetime (§3.3) and :class:`TokenCodec` signs the
state of a list request sequence into a resumption token (§3.5).
"""

from __future__ import annotations

from server_module.oai.dates import Granularity, format_datestamp, parse_datestamp
from server_module.oai.errors import (
    BadArgument,
    BadResumptionToken,
    BadVerb,
    CannotDisseminateFormat,
    IdDoesNotExist,
    NoMetadataFormats,
    NoRecordsMatch,
    NoSetHierarchy,
    OAIError,
)
from server_module.oai.request import OAIRequest, echo_attributes, parse_request
from server_module.oai.tokens import ListState, TokenCodec

__all__ = [
    "BadArgument",
    "BadResumptionToken",
    "BadVerb",
    "CannotDisseminateFormat",
    "Granularity",
    "IdDoesNotExist",
    "ListState",
    "NoMetadataFormats",
    "NoRecordsMatch",
    "NoSetHierarchy",
    "OAIError",
    "OAIRequest",
    "TokenCodec",
    "echo_attributes",
    "format_datestamp",
    "parse_datestamp",
    "parse_request",
]
