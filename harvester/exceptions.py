"""The harvester's errors, grouped by what the caller can do about each.

::

    HarvestError                 base; ``retryable`` says whether trying again may help,
    │                            ``exit_code`` what the command exits with (coop_common/exitcode.py)
    ├── FetchError               a resource or endpoint could not be fetched
    │   ├── UnreachableError     the site or endpoint: unknown host, refused, no TLS, no answer
    │   ├── TransientFetchError  timeouts, resets, 429/5xx: retry with back-off (retryable)
    │   │   ├── NothingReceived  closed before any byte of the answer (a stale kept connection)
    │   │   └── RobotsUnreachable  its host's robots.txt unreadable for now (warned once a host)
    │   └── PermanentFetchError  4xx other than 429, refused by robots.txt, too many redirects
    ├── OAIError                 the provider answered with an OAI-PMH <error>; one class per code
    │   ├── BadArgument, BadVerb, CannotDisseminateFormat, IdDoesNotExist,
    │   │   NoMetadataFormats, NoSetHierarchy
    │   ├── BadResumptionToken   restart the list from the saved datestamp (retryable)
    │   └── NoRecordsMatch       nothing to do: not a failure
    ├── ProtocolError            malformed or truncated XML, bad dates, not OAI-PMH at all
    │   └── EnvelopeError        an OAI-PMH response (by its root) whose envelope is broken
    ├── DiscoveryError           no OAI-PMH endpoint, and crawling is not allowed
    │   ├── UnusableEndpoint     the URL answers OAI-PMH, but its Identify cannot be used
    │   └── RecordsRepository    the endpoint's identifiers are not URLs: records mode
    ├── ArchiveError             a WARC or DIDL could not be written or repaired
    ├── FetchProcessError        a process fetching a share of the list ended early
    ├── StateError               the state database is unusable
    │   ├── StateURLError        the state URL names no supported store (exit code 2)
    │   └── LeaseLost            a worker's lease was taken over: its step is rolled back
    ├── CollectionInUse          another run holds the collection's lock (exit code 2)
    ├── NotACollection           a folder to look at holds no state and no WARC files
    └── InterruptedCollection    a read-only collection a killed harvest left unfinished
"""

from __future__ import annotations

from typing import ClassVar

from coop_common.exitcode import ExitCode


class HarvestError(Exception):
    """Base of every harvester error."""

    retryable: ClassVar[bool] = False
    exit_code: ClassVar[ExitCode] = ExitCode.FAILED


class FetchError(HarvestError):
    """A resource or endpoint could not be fetched."""


class UnreachableError(FetchError):
    """The site or its endpoint cannot be reached at all: nothing of it can be archived."""


class TransientFetchError(FetchError):
    """Timeouts, connection resets, HTTP 429 and 5xx: worth retrying after a pause."""

    retryable = True

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NothingReceived(TransientFetchError):
    """The connection closed before any byte of the answer: on a kept-alive connection, the
    server had closed it meanwhile, and the request is sent again on a new one."""


class RobotsUnreachable(TransientFetchError):
    """The URL's host's robots.txt answered 5xx or 429, or nothing: no URL of the host is
    fetched for a while. ``robots.py`` warns once for the host; each URL's failure is only
    logged at INFO, so a host's outage is one warning, not one a URL."""


class PermanentFetchError(FetchError):
    """4xx other than 429, disallowed by robots.txt, redirect loops: retrying now won't help."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class OAIError(HarvestError):
    """An OAI-PMH ``<error code="...">``; each code has its own subclass, named by the code with
    a capital first letter (unless it sets ``code`` itself)."""

    code: ClassVar[str] = ""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if "code" not in cls.__dict__:
            cls.code = cls.__name__[0].lower() + cls.__name__[1:]

    @classmethod
    def for_code(cls, code: str, message: str) -> OAIError:
        """The exception of the provider's error code, with ``message`` (which names it)."""
        sub = next((s for s in cls.__subclasses__() if s.code == code), None)
        return (sub or ProtocolErrorCode)(message)


class BadArgument(OAIError):
    """The request's arguments are illegal, missing or repeated."""


class BadResumptionToken(OAIError):
    """The resumptionToken is invalid or expired: restart the list."""

    retryable = True


class BadVerb(OAIError):
    """The verb is missing, repeated or not an OAI-PMH verb."""


class CannotDisseminateFormat(OAIError):
    """The metadataPrefix is not offered for the item or by the repository."""


class IdDoesNotExist(OAIError):
    """The identifier is unknown or illegal in the repository."""


class NoRecordsMatch(OAIError):
    """The selective-harvesting arguments select nothing."""


class NoMetadataFormats(OAIError):
    """No metadata format is available for the item."""


class NoSetHierarchy(OAIError):
    """The repository does not support sets."""


class ProtocolErrorCode(OAIError):
    """An error code the OAI-PMH specification does not define."""

    code = "?"


class ProtocolError(HarvestError):
    """The answer is not well-formed OAI-PMH: bad or truncated XML, bad dates."""


class EnvelopeError(ProtocolError):
    """An OAI-PMH response, by its root element, whose envelope (§3.2) is broken: no or a bad
    ``responseDate``, no element of the verb asked for."""


class DiscoveryError(HarvestError):
    """No OAI-PMH endpoint was found and the mode does not allow crawling."""


class UnusableEndpoint(DiscoveryError):
    """The URL answers OAI-PMH, but its Identify cannot be used (an OAI-PMH error, a broken
    envelope): the cause is named, and the URL is neither probed further nor crawled."""


class RecordsRepository(DiscoveryError):
    """The endpoint's first list shows identifiers that are not URLs (or it has no
    ``oai_didl``): a repository to ingest in records mode, not a mod_oai site. Raised before
    anything of that list is kept; the harvest turns to records mode."""


class ArchiveError(HarvestError):
    """A WARC, DIDL or index file could not be written or repaired."""


class FetchProcessError(HarvestError):
    """A process fetching a share of the listed resources failed or was killed; what it did
    not archive stays pending for the next run."""


class StateError(HarvestError):
    """The state database cannot be opened, is from a newer version, or is corrupt."""


class StateURLError(StateError):
    """``--state`` names a scheme or form no implementation supports."""

    exit_code = ExitCode.USAGE


class LeaseLost(StateError):
    """A worker's lease expired and another worker claimed it (its fencing token moved on):
    the step being acknowledged is rolled back and the new holder does it again."""

    retryable = True


class CollectionInUse(HarvestError):
    """Another harvester holds the collection's lock: this run must not touch it."""

    exit_code = ExitCode.USAGE


class NotACollection(HarvestError):
    """A folder given to ``status``, ``verify``, ``report`` or ``wacz`` holds no collection."""


class InterruptedCollection(HarvestError):
    """A harvest was interrupted in a collection that cannot be repaired where it lies (it
    cannot be written): reading it as it is would report success on what is missing."""
