"""The OAI-PMH repository: one request in, one response document out (spec §4).

It joins the sans-IO protocol core (:mod:`server_module.oai`) to the file index and the
metadata formats. It knows no HTTP: the Flask view hands it the received argument pairs and
sends back the bytes it returns.

Lists are keyset-paged on ``(datestamp, identifier)`` and bounded at the time T the list
started: the token carries T as the list's ``until``, so a record that changes during a long
harvest leaves this list (it now has a datestamp after T) instead of being delivered twice,
and appears in the next incremental harvest. Any page costs the same as the first. T is the
responseDate of the first page, which waits for a refresh's commit in flight
(``snapshot(settled=True)``): every row that becomes visible later is stamped T or after, so
a harvest ``from=T`` exactly finds it. The items of a first page are made once for every
harvest of the same list, until a refresh changes the index (:mod:`server_module.lists.firstpages`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from server_module.formats import FormatContext, FormatRegistry, MetadataFormat, schema_url
from server_module.index.fileindex import FileIndex
from server_module.index.snapshot import Selection, Snapshot
from server_module.lists.contentcoding import Kept
from server_module.lists.firstpages import FirstPages, ListStart
from server_module.lists.pagecache import Page, PageCache
from server_module.oai import render
from server_module.oai.errors import (
    BadArgument,
    BadResumptionToken,
    IdDoesNotExist,
    NoRecordsMatch,
    NoSetHierarchy,
    OAIError,
)
from server_module.oai.request import OAIRequest, echo_attributes, parse_request
from server_module.oai.tokens import ListState, TokenCodec
from server_module.records import FileRecord
from server_module.settings import ProviderSettings

log = logging.getLogger(__name__)
Pairs = Sequence[tuple[str, str]]


class Repository:
    """Answers the six verbs from a :class:`FileIndex` snapshot."""

    def __init__(
        self,
        settings: ProviderSettings,
        index: FileIndex,
        formats: FormatRegistry,
        *,
        stylesheet_url: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.index = index
        self.formats = formats
        self.clock = clock
        self.stylesheet_url = stylesheet_url
        self.pages = PageCache()
        self.firsts = FirstPages()
        self.codec = TokenCodec(index.secret(), ttl=settings.token_ttl, clock=clock)
        self.context = FormatContext(
            docroot=settings.docroot,
            schema_base=settings.endpoint_url + "/schemas",
            inline_max=settings.inline_max,
            exclude=settings.exclude,
            allow_outside=settings.allow_outside,
        )

    def handle(self, pairs: Pairs) -> bytes:
        """The response document for the received arguments (never raises an OAI error)."""
        return b"".join(self.respond(pairs)[0])

    def respond(self, pairs: Pairs) -> tuple[list[bytes], tuple[str, str] | None]:
        """The response document in parts (:func:`render.document_parts`: a part made once
        is sent, and compressed, as it is), and the (verb, token) of the request it invites
        next."""
        env = render.Envelope(int(self.clock()), self.settings.endpoint_url, self.stylesheet_url)
        try:
            request = parse_request(pairs, known_prefixes=self.formats.prefixes())
        except OAIError as error:
            body = render.errors_body([error])
            return render.document_parts(env, echo_attributes(pairs, error), body), None
        try:
            page = self._dispatch(request, env.response_date)
        except OAIError as error:
            echo = request.attributes if error.echo_arguments else ()
            return render.document_parts(env, echo, render.errors_body([error])), None
        follow = None if page.next_token is None else (request.verb, page.next_token)
        return render.document_parts(env, request.attributes, page.body), follow

    def read_ahead(self, verb: str, token: str) -> None:
        """Make the page this token asks for and keep it for its request (:mod:`pagecache`)."""
        pairs = [("verb", verb), ("resumptionToken", token)]
        try:
            request = parse_request(pairs, known_prefixes=self.formats.prefixes())
            with self.index.snapshot() as snap:  # the page is of the generation read here
                generation = snap.generation()
                page = self._handler(request.verb)(request, int(self.clock()))
        except OAIError:
            return  # its request, if it comes, gets the error
        except Exception:  # speculative work: its request, if it comes, will try again
            log.warning("could not make the page ahead for %s", verb, exc_info=True)
            return
        self.pages.put(verb, token, generation, page)

    def _dispatch(self, request: OAIRequest, now: int) -> Page:
        token = request.resumption_token
        if token is not None:
            with self.index.snapshot() as snap:
                kept = self.pages.get(request.verb, token, snap.generation())
            if kept is not None:
                self.codec.decode(token, verb=request.verb)  # kept, but has it expired since?
                return kept
        return self._handler(request.verb)(request, now)

    def _handler(self, verb: str) -> Callable[[OAIRequest, int], Page]:
        handler: Callable[[OAIRequest, int], Page] = getattr(self, "_" + verb)
        return handler

    # -- the verbs ---------------------------------------------------------------------

    def _Identify(self, request: OAIRequest, now: int) -> Page:
        with self.index.snapshot() as snap:
            earliest = snap.earliest_datestamp()
        desc = render.RepositoryDescription(
            name=self.settings.name,
            base_url=self.settings.endpoint_url,
            admin_emails=[self.settings.email],
            earliest_datestamp=now if earliest is None else earliest,
        )
        return Page(render.identify_body(desc))

    def _ListMetadataFormats(self, request: OAIRequest, now: int) -> Page:
        if request.identifier is not None:
            with self.index.snapshot() as snap:
                if snap.get(request.identifier) is None:
                    raise IdDoesNotExist(f"No item has the identifier {request.identifier!r}")
        triples = [(f.prefix, schema_url(f, self.context), f.namespace) for f in self.formats]
        return Page(render.metadata_formats_body(triples))

    def _ListSets(self, request: OAIRequest, now: int) -> Page:
        if request.resumption_token is not None:
            raise BadResumptionToken("ListSets is never paged, so no token is valid")
        with self.index.snapshot() as snap:
            specs = snap.set_specs()
        if not specs:
            raise NoSetHierarchy("The repository holds no files yet, hence no sets")
        return Page(render.sets_body(specs))

    def _GetRecord(self, request: OAIRequest, now: int) -> Page:
        if request.identifier is None or request.metadata_prefix is None:
            raise BadArgument("GetRecord needs identifier and metadataPrefix")
        with self.index.snapshot() as snap:
            rec = snap.get(request.identifier)
        if rec is None:
            raise IdDoesNotExist(f"No item has the identifier {request.identifier!r}")
        fmt = self._format(request.metadata_prefix)
        metadata = None if rec.deleted else fmt.render(rec, self.context)
        return Page(render.verb_body("GetRecord", render.record(_header(rec), metadata)))

    def _ListIdentifiers(self, request: OAIRequest, now: int) -> Page:
        state = self._list_state(request, now)
        with self.index.snapshot(settled=state.total < 0) as snap:
            if state.total < 0:
                start = self._first_headers(state, snap)
                state = replace(state, total=start.total)
            else:
                start = self._headers(state, snap)
        return self._list_page(
            "ListIdentifiers", [start.items], start.count, state, start.last, start.more, now
        )

    def _first_headers(self, state: ListState, snap: Snapshot) -> ListStart:
        """A list's first page of headers: kept from an earlier harvest of the same list and
        the same index (:mod:`firstpages`), or made and kept."""
        newest = snap.newest_datestamp()
        bounds_nothing = newest is None or state.until >= newest
        key = replace(state, until=-1 if bounds_nothing else state.until, issued=0)
        generation = snap.generation()
        start = self.firsts.get(key, generation)
        if start is None:
            start = self._headers(self._counted(state, snap), snap)
            self.firsts.put(key, generation, start)
        return start

    def _headers(self, state: ListState, snap: Snapshot) -> ListStart:
        limit = self.settings.page_size
        rows = snap.headers(_selection(state), limit=limit + 1)
        page = rows[:limit]
        _require(page)
        last = (page[-1][1], page[-1][0])
        items = Kept("".join(render.headers(page)).encode())
        return ListStart(state.total, items, len(page), last, len(rows) > limit)

    def _ListRecords(self, request: OAIRequest, now: int) -> Page:
        """Pages are cut by count and by size: ``oai_didl`` records carry whole files."""
        state, limit = self._list_state(request, now), self.settings.records_page_size
        fmt = self._format(state.metadata_prefix)
        with self.index.snapshot(settled=state.total < 0) as snap:
            state = self._counted(state, snap)
            recs = snap.records(_selection(state), limit=limit + 1)
        parts: list[str] = []
        budget = self.settings.page_bytes
        for rec in recs[:limit]:
            weight = 200 if rec.deleted else fmt.weight(rec, self.context)
            if parts and weight > budget:
                break
            budget -= weight
            metadata = None if rec.deleted else fmt.render(rec, self.context)
            parts.append(render.record(_header(rec), metadata))
        _require(parts)
        last = recs[len(parts) - 1]
        more = len(recs) > len(parts)
        last_key = (last.datestamp, last.identifier)
        return self._list_page("ListRecords", parts, len(parts), state, last_key, more, now)

    # -- lists -----------------------------------------------------------------------

    def _format(self, prefix: str | None) -> MetadataFormat:
        fmt = self.formats.get(prefix or "")
        if fmt is None:  # parse_request checked it; a token from another deployment may not
            raise BadResumptionToken(f"The token names an unknown format {prefix!r}")
        return fmt

    def _list_state(self, request: OAIRequest, now: int) -> ListState:
        """The list's state: decoded from the token, or new and bounded at ``now``."""
        if request.resumption_token is None:
            return ListState.from_request(request, now=now, total=-1)
        return self.codec.decode(request.resumption_token, verb=request.verb)

    @staticmethod
    def _counted(state: ListState, snap: Snapshot) -> ListState:
        """Count the list once, at its first page; an empty list is noRecordsMatch (§3.6)."""
        if state.total >= 0:
            return state
        total = snap.count(Selection(state.from_, state.until, state.set_spec))
        if total == 0:
            raise NoRecordsMatch("No item matches these arguments")
        return replace(state, total=total)

    def _list_page(
        self,
        verb: str,
        items: Sequence[str | bytes],
        count: int,
        state: ListState,
        last: tuple[int, str],
        more: bool,
        now: int,
    ) -> Page:
        """The page of ``count`` items (in ``items``, as parts) and its resumptionToken
        element (§3.5): none for a list that fit in one page, and an empty one on the last
        page of a longer list."""
        if not more:
            total = max(state.total, state.cursor + count)
            last_page = state.cursor > 0
            end = render.resumption_token("", total, state.cursor, None) if last_page else ""
            return Page(render.list_body(verb, items, end))
        nxt = state.advance(last, count, now=now)
        total = max(state.total, nxt.cursor + 1)
        token = self.codec.encode(nxt)
        element = render.resumption_token(token, total, state.cursor, self.codec.expires(nxt))
        return Page(render.list_body(verb, items, element), token)


def _selection(state: ListState) -> Selection:
    """The rows of the list that remain after its last page."""
    return Selection(state.from_, state.until, state.set_spec, state.after)


def _header(rec: FileRecord) -> str:
    return render.header(rec.identifier, rec.datestamp, rec.deleted, rec.mime)


def _require(page: Sequence[object]) -> None:
    """A list page holds at least one item (OAI-PMH.xsd). A resumed list can come up empty
    when every remaining item changed after the list began: those are outside this list,
    which has therefore ended; the next incremental harvest gets them."""
    if not page:
        raise NoRecordsMatch("No item remains in this list: the rest changed since it began")
