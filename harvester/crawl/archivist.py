"""The crawl's archivist: a fetched page's links found and its WARC group written, in the
crawling process (:class:`InlineArchivist`) or in a process of its own
(:class:`ArchiveProcess`; ``crawl_processes``, by default the latter on two cores or more).

One process crawls a small page in about 1.5 ms of CPU, and close to half of it is the page's
WARC group (its records, DIDL record and CDXJ line) and its links. The archiving process, a
fork of the crawling one made when the crawl starts, does that half on another core while
the crawling process fetches, schedules and keeps the state. They talk over a socket pair:
each page goes over as its resource row and exchange, pickled, with a ticket numbered in
sending order; the child answers in the same order with the capture and the links' URLs (all
the frontier reads of a link: strings pickle and load in half the time of
:class:`~harvester.crawl.links.Link` tuples). When pages already wait for the child
(its answers say how many it has yet to archive; :data:`HELP_AT`), the crawling process finds
the next page's links itself and sends them along: on a site of large pages the links are most
of the child's work, and the crawling process would otherwise wait for it.

The crash rules stay those of one process (``crawl/stepbatch.py``). The child writes its
groups, in ticket order, into WARC files of its own (a :meth:`sibling
<harvester.archive.warc.RotatingWARCWriter.sibling>` writer: their names carry its pid), and
a page's group is written before the crawler's commit that records it. No group reaches a
finished file before that commit: when a step batch ends (committed or rolled back), the
crawler tells the child the ticket below which every page is *settled* (its step ended, or
archiving it failed); a child whose file is full starts the next file only once every group
in it is settled, holding the pages that come meanwhile and asking the crawler to end its
batch at once. After a kill of either process, the next run's repair
and reconcile find every group the state missed in the ``.open`` files, as with one process.

The child dies with its parent; a child that dies (or fails to write) fails the crawl with an
:class:`~harvester.exceptions.ArchiveError`, and its unrecorded pages stay queued.
"""

from __future__ import annotations

import asyncio
import copyreg
import io
import logging
import os
import pickle
import signal
import socket
import struct
import sys
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, NamedTuple, NoReturn, Protocol

from harvester.archive.recorder import Recorder
from harvester.childprocess import become_child, fork
from harvester.crawl.links import response_links
from harvester.exceptions import ArchiveError
from harvester.http.exchange import HttpExchange
from harvester.storage.protocol import Capture, Resource

log = logging.getLogger(__name__)
_HEAD = struct.Struct("!I")  # a message's length, before its pickle
# Pages the child had yet to archive, by its last answer, from which the crawling process
# finds a page's links itself (the child then only writes the page's group): on a site of
# large pages the links are most of the child's work, and it falls behind.
HELP_AT = 4


class Archived(NamedTuple):
    """A page archived: its capture, whether it was a revisit, its links' URLs in document
    order, and its ticket."""

    capture: Capture
    unchanged: bool
    links: list[str]
    ticket: int


class Archivist(Protocol):
    async def start(self, commit: Callable[[], None]) -> None:
        """Ready to archive; ``commit`` ends the open step batch, when the archivist needs it
        to go on."""

    async def archive(self, res: Resource, result: HttpExchange) -> Archived:
        """``result``'s group written (a revisit of ``res``'s capture when unchanged)."""

    def stepped(self, ticket: int) -> None:
        """The page of ``ticket`` is recorded in the open step batch."""

    def one_file(self) -> AbstractContextManager[None]:
        """Around a step batch: the groups of its pages reach no finished file before it ends."""

    async def close(self) -> None: ...


def archives_apart(wanted: int, cores: int | None = None) -> bool:
    """Whether a crawl archives in a process of its own: ``wanted`` 2, or 0 (the default)
    on two cores or more; 1 archives in the crawling process, as does a system that cannot
    fork.

    >>> archives_apart(0, 2), archives_apart(0, 1), archives_apart(1, 8), archives_apart(2, 1)
    (True, False, False, True)
    """
    if wanted == 1 or not hasattr(os, "fork"):
        return False
    return wanted == 2 or (cores if cores is not None else os.cpu_count() or 1) > 1


class InlineArchivist:
    """Archives in the crawling process, with its recorder."""

    def __init__(self, recorder: Recorder, *, follow_nofollow: bool) -> None:
        self.recorder, self.follow_nofollow = recorder, follow_nofollow

    async def start(self, commit: Callable[[], None]) -> None:
        return None

    async def archive(self, res: Resource, result: HttpExchange) -> Archived:
        return Archived(*_archive(self.recorder, res, result, self.follow_nofollow), 0)

    def stepped(self, ticket: int) -> None:
        return None

    def one_file(self) -> AbstractContextManager[None]:
        return self.recorder.writer.one_file()

    async def close(self) -> None:
        return None


class ArchiveProcess:
    """Archives in a forked child (the module's docstring says how)."""

    def __init__(
        self, recorder: Recorder, *, follow_nofollow: bool, help_at: int = HELP_AT
    ) -> None:
        self.recorder, self.follow_nofollow, self.help_at = recorder, follow_nofollow, help_at
        self.pid = 0
        self._transport: asyncio.Transport | None = None
        self._waiting: dict[int, asyncio.Future[Archived]] = {}
        self._unsettled: set[int] = set()
        self._stepped: list[int] = []
        self._next = 0
        self._behind = 0  # pages the child had yet to archive when it last answered
        self._ended: str | None = None
        self._commit: Callable[[], None] = lambda: None

    async def start(self, commit: Callable[[], None]) -> None:
        self._commit = commit
        ours, theirs = socket.socketpair()
        pid, parent = fork()
        if pid == 0:
            ours.close()
            _serve(theirs, parent, self.recorder, self.follow_nofollow)
        theirs.close()
        self.pid = pid
        channel = _Channel(self._received, self._lost)
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_connection(lambda: channel, sock=ours)

    async def archive(self, res: Resource, result: HttpExchange) -> Archived:
        if self._ended is not None:
            raise ArchiveError(self._ended)
        links = None
        if self._behind >= self.help_at:  # the child is behind: the links are found here
            links = _link_urls(result, self.follow_nofollow)
        ticket, self._next = self._next, self._next + 1
        future: asyncio.Future[Archived] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = future
        self._unsettled.add(ticket)
        self._send(("page", ticket, res, result, links))
        try:
            archived = await future
        finally:  # a page cancelled stays unsettled: its group may be written all the same
            self._waiting.pop(ticket, None)
        return archived if links is None else archived._replace(links=links)

    def stepped(self, ticket: int) -> None:
        self._stepped.append(ticket)

    @contextmanager
    def one_file(self) -> Iterator[None]:
        try:
            yield
        finally:  # committed or rolled back, the batch's pages are settled
            self._unsettled.difference_update(self._stepped)
            self._stepped.clear()
            self._send(("settled", min(self._unsettled, default=self._next)))

    async def close(self) -> None:
        """Let the child finish its file and end; raise if it failed."""
        transport, self._transport = self._transport, None
        if transport is None:
            return
        transport.close()
        _, status = await asyncio.get_running_loop().run_in_executor(None, os.waitpid, self.pid, 0)
        if (code := os.waitstatus_to_exitcode(status)) != 0:
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            raise ArchiveError(f"the crawl's archiving process (pid {self.pid}) ended by {how}")

    def _send(self, message: tuple[Any, ...]) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(_framed(message))

    def _received(self, reply: tuple[Any, ...]) -> None:
        if reply[0] == "hold":  # after the pages answered before it have taken their steps
            asyncio.get_running_loop().call_soon(self._commit)
            return
        self._behind = reply[-1]  # every page's answer ends with the child's backlog
        if reply[0] == "error":  # its group was cut back: nothing of it is in the file
            self._unsettled.discard(reply[1])
        future = self._waiting.pop(reply[1], None)
        if future is None or future.done():  # its page was cancelled
            return
        if reply[0] == "error":
            future.set_exception(ArchiveError(reply[2]))
            return
        _, ticket, capture, unchanged, links, _ = reply
        future.set_result(Archived(capture, unchanged, links or [], ticket))  # None: ours

    def _lost(self, exc: Exception | None) -> None:
        self._ended = (
            f"the crawl's archiving process (pid {self.pid}) ended while pages were due;"
            " they stay queued for the next run"
        )
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ArchiveError(self._ended))
        self._waiting.clear()


class _Channel(asyncio.Protocol):
    """The crawling process's end of the socket: whole messages handed on as they come."""

    def __init__(
        self, received: Callable[[Any], None], lost: Callable[[Exception | None], None]
    ) -> None:
        self._buffer = bytearray()
        self._on_message, self._on_lost = received, lost

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        for message in _unframed(self._buffer):
            self._on_message(message)

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(exc)


def _archive(
    recorder: Recorder,
    res: Resource,
    result: HttpExchange,
    follow_nofollow: bool,
    links: list[str] | None = None,
) -> tuple[Capture, bool, list[str]]:
    """``result``'s group written, with its links (found here unless given)."""
    if links is None:
        links = _link_urls(result, follow_nofollow)
    capture, unchanged = recorder.fetched(res, result, outlinks=links)
    return capture, unchanged, links


def _link_urls(result: HttpExchange, follow_nofollow: bool) -> list[str]:
    return [link.url for link in response_links(result, follow_nofollow=follow_nofollow)]


def _by_fields(value: Any) -> tuple[type, tuple[Any, ...]]:
    """How a slotted dataclass is pickled here: its class and its fields' values, as
    arguments (the default pickles it through a Python ``__getstate__``, several times
    slower)."""
    return type(value), tuple([getattr(value, name) for name in type(value).__slots__])


_PICKLING = copyreg.dispatch_table | {
    kind: _by_fields for kind in (Resource, HttpExchange, Capture)
}


def _framed(message: tuple[Any, ...]) -> bytes:
    buffer = io.BytesIO()
    buffer.write(bytes(_HEAD.size))
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _PICKLING
    pickler.dump(message)
    framed = buffer.getbuffer()
    _HEAD.pack_into(framed, 0, len(framed) - _HEAD.size)
    del framed
    return buffer.getvalue()


def _unframed(buffer: bytearray) -> list[Any]:
    """The whole messages at the start of ``buffer``, taken out of it."""
    messages, at = [], 0
    while len(buffer) - at >= _HEAD.size:
        (size,) = _HEAD.unpack_from(buffer, at)
        end = at + _HEAD.size + size
        if end > len(buffer):
            break
        messages.append(pickle.loads(buffer[at + _HEAD.size : end]))
        at = end
    del buffer[:at]
    return messages


def _serve(sock: socket.socket, parent: int, recorder: Recorder, follow_nofollow: bool) -> NoReturn:
    """The archiving process's whole life: pages archived until the socket ends, its last
    file finished when the crawl recorded all its groups, then ``_exit``
    (:mod:`harvester.childprocess`). It ignores SIGINT: a ^C ends the crawling process,
    whose socket's end then ends this one."""
    code = 1
    try:
        become_child(parent, interrupt=signal.SIG_IGN)
        writer = recorder.writer.sibling()
        server = _Server(
            sock,
            Recorder(
                writer,
                strategy=recorder.strategy,
                endpoint=recorder.endpoint,
                identifier=recorder.identifier,
            ),
            follow_nofollow,
        )
        server.run()
        if server.settled > server.written:
            writer.close()  # every group in the file is recorded: it is finished
        # Else the crawl ended (an error, a ^C) with groups it never recorded: their file
        # stays ``.open``, for the next run's repair and reconcile to find, as after a kill.
        code = 0
    except BaseException as exc:
        print(f"harvester: the crawl's archiving process: {exc}", file=sys.stderr, flush=True)
    finally:
        os._exit(code)


class _Server:
    """The child's loop: messages read, pages archived in order, each answered when done."""

    def __init__(self, sock: socket.socket, recorder: Recorder, follow_nofollow: bool) -> None:
        self.sock, self.recorder, self.follow_nofollow = sock, recorder, follow_nofollow
        self.backlog: deque[tuple[Any, ...]] = deque()
        self.settled = 0  # every ticket below it is settled
        self.written = -1  # the last ticket whose group was written
        self.holding = False  # pages wait for a commit

    def run(self) -> None:
        """Until the crawling process closes its end (answers unread, after an error: reset)."""
        buffer = bytearray()
        with suppress(ConnectionError):
            while chunk := self.sock.recv(1 << 20):
                buffer += chunk
                for message in _unframed(buffer):
                    if message[0] == "settled":
                        self.settled = max(self.settled, message[1])
                    else:
                        self.backlog.append(message)
                self._work()

    def _work(self) -> None:
        """Archive the pages waiting, each answered at once (the crawler goes on with it
        while the next is archived), but none into a full file that holds unsettled groups
        (the next group would finish that file): then ask for a commit, once."""
        while self.backlog:
            if self.recorder.writer.full() and self.settled <= self.written:
                if not self.holding:
                    self.sock.sendall(_framed(("hold", self.written)))
                self.holding = True
                return
            self.holding = False
            _, ticket, res, result, links = self.backlog.popleft()
            reply = _framed((*self._one(ticket, res, result, links), len(self.backlog)))
            self.written = ticket  # before the answer, which may find the socket closed
            self.sock.sendall(reply)

    def _one(
        self, ticket: int, res: Resource, result: HttpExchange, given: list[str] | None
    ) -> tuple[Any, ...]:
        """The answer for one page (its links go back only when found here), to which the
        pages still to archive are added."""
        try:
            capture, unchanged, links = _archive(
                self.recorder, res, result, self.follow_nofollow, given
            )
        except ArchiveError as exc:
            return ("error", ticket, str(exc))
        except Exception as exc:  # a defect: its trace goes to the log, the crawl ends
            log.exception("archiving %s failed", result.url)
            return ("error", ticket, f"archiving {result.url} failed: {exc!r}")
        return ("ok", ticket, capture, unchanged, None if given is not None else links)
