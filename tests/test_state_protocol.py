"""The state's promises (``harvester/storage/protocol.py``), kept alike by both backends: the
``state_url`` fixture runs every test on SQLite and on a throwaway PostgreSQL cluster."""

from __future__ import annotations

import pytest

from harvester.storage import open_state
from harvester.storage.protocol import Capture, Listed, ListedPage, ListKey, QueuedRow

SITE = "http://127.0.0.2:9/"
KEY = ListKey("http://127.0.0.2:9/oai", None, "oai_dc")


def _row(url: str, host: str, seq: int) -> QueuedRow:
    return QueuedRow(url, host, 0, "default", 0, {"backlinks": 1.5}, seq, None)


def _capture(record_id: str) -> Capture:
    return Capture(record_id, "a.warc.gz", 10, 20, "2024-01-01T00:00:00Z", 200, None, None,
                   "sha1:X", "ab", "cd")  # fmt: skip


def test_a_url_is_queued_once_and_read_back_per_host(state_url: str) -> None:
    with open_state(state_url) as state:
        rows = [_row(SITE + "a", "h1", 1), _row(SITE + "b", "h2", 2), _row(SITE + "c", "h1", 3)]
        assert state.enqueue(SITE, rows) == rows
        assert state.enqueue(SITE, [_row(SITE + "a", "h1", 4)]) == []  # queued before
        assert [r.url for r in state.queued(SITE, ["h1"])] == [SITE + "a", SITE + "c"]
        assert list(state.queued(SITE)) == rows and state.max_seq(SITE) == 3
        assert state.counts(SITE) == {"pending": 3}


def test_a_transaction_commits_all_or_nothing(state_url: str) -> None:
    with open_state(state_url) as state:
        state.enqueue(SITE, [_row(SITE + "a", "h1", 1)])
        with pytest.raises(RuntimeError), state.transaction():
            state.mark_archived(SITE + "a", _capture("<urn:uuid:1>"), None)
            state.dequeue(SITE + "a")
            raise RuntimeError("killed mid-step")
        assert state.counts(SITE) == {"pending": 1} and len(list(state.queued(SITE))) == 1
        with state.transaction():
            state.mark_archived(SITE + "a", _capture("<urn:uuid:1>"), None)
            state.dequeue(SITE + "a")
        assert state.counts(SITE) == {"archived": 1} and list(state.queued(SITE)) == []
        assert state.known_record_ids(["<urn:uuid:1>", "<urn:uuid:2>"]) == {"<urn:uuid:1>"}
        assert state.captures_by_worker(SITE) == {"": 1}


def test_a_batch_keeps_the_steps_before_an_exception(state_url: str) -> None:
    with open_state(state_url) as state:
        state.add_pending(SITE, [SITE + "a", SITE + "b"])
        with pytest.raises(RuntimeError), state.batch():
            state.mark_archived(SITE + "a", _capture("<urn:uuid:1>"), None)
            raise RuntimeError("a fetch crashed")
        assert state.counts(SITE) == {"archived": 1, "pending": 1}


def test_a_listed_page_makes_new_versions_pending_and_notes_deletions(state_url: str) -> None:
    with open_state(state_url) as state:
        state.lists.start(KEY, None)
        page = [
            Listed(SITE + "a", "oai:a", "2024-01-02", ("text",), False),
            Listed(SITE + "gone", "oai:g", "2024-01-02", (), True),
        ]
        assert state.record_page(SITE, ListedPage(KEY, page, "t1", "2024-02-01T00:00:00Z")) == (
            1,
            1,
        )
        state.mark_archived(SITE + "a", _capture("<urn:uuid:1>"), "2024-01-02")
        again = [Listed(SITE + "a", "oai:a", "2024-01-02", ("text",), False)]
        assert state.record_page(SITE, ListedPage(KEY, again, None, "2024-03-01T00:00:00Z")) == (
            0,
            0,
        )
        position = state.lists.position(KEY)
        assert (position.token, position.response_date) == (None, "2024-02-01T00:00:00Z")
        assert state.get(SITE + "a").set_specs == ("text",)  # type: ignore[union-attr]


def test_a_new_cycle_requeues_what_was_done(state_url: str) -> None:
    with open_state(state_url) as state:
        state.enqueue(SITE, [_row(SITE + "a", "h1", 1)])
        with state.transaction():
            state.mark_archived(SITE + "a", _capture("<urn:uuid:1>"), None)
            state.dequeue(SITE + "a")
        assert state.requeue_done(SITE) == 1
        assert [r.url for r in state.queued(SITE)] == [SITE + "a"]
        assert state.counts(SITE) == {"pending": 1}


def test_a_version_listed_in_a_second_format_is_changed_once(state_url: str) -> None:
    """An item stored in one format is ``changed`` when its version is first listed in
    another (its record must hold both), ``unchanged`` when listed again in either; an older
    version is ``unchanged`` and a newer one ``changed``; an item not stored is ``new``."""
    from harvester.oai.models import ListedHeader

    def header(identifier: str, datestamp: str) -> ListedHeader:
        return ListedHeader(identifier, datestamp, (), False)

    endpoint, v1 = KEY.endpoint, header("oai:x:1", "2024-05-02")
    with open_state(state_url) as state:
        items = state.items
        with state.transaction():
            assert items.note_page(endpoint, "oai_dc", [(v1, b"<dc/>")]) == ["new"]
            items.settle(endpoint, v1.identifier, "archived", "<urn:uuid:1>")
        with state.transaction():
            page = [(v1, b"<marc/>"), (header("oai:x:2", "2024-05-01"), b"<marc/>")]
            assert items.note_page(endpoint, "marc", page) == ["changed", "new"]
            items.settle(endpoint, v1.identifier, "archived", "<urn:uuid:2>")
        with state.transaction():
            again = [(v1, b"<marc/>"), (header("oai:x:1", "2024-05-01"), b"<old/>")]
            assert items.note_page(endpoint, "marc", again) == ["unchanged", "unchanged"]
            assert items.note_page(endpoint, "oai_dc", [(v1, b"<dc/>")]) == ["unchanged"]
            newer = [(header("oai:x:1", "2024-05-03"), b"<dc2/>")]
            assert items.note_page(endpoint, "oai_dc", newer) == ["changed"]
        assert items.formats(endpoint, v1.identifier) == [
            ("marc", b"<marc/>"),
            ("oai_dc", b"<dc2/>"),
        ]


def test_the_seed_keeps_its_last_capture_and_is_no_counted_resource(state_url: str) -> None:
    """A listed run's start URL (``harvester/listed/seed.py``): its last capture is kept, replaced
    by the next, counted nowhere, fetched by no list; a URL a list named is left alone."""
    with open_state(state_url) as state:
        state.add_pending(SITE, [SITE + "index.html"])
        state.remember_seed(SITE, SITE, _capture("<urn:uuid:1>"))
        state.remember_seed(SITE, SITE, _capture("<urn:uuid:2>"))
        seed = state.get(SITE)
        assert seed is not None and (seed.status, seed.record_id) == ("seed", "<urn:uuid:2>")
        assert (seed.sha1, seed.warc_file, seed.http_status) == ("ab", "a.warc.gz", 200)
        assert state.counts(SITE) == {"pending": 1}
        assert [r.url for r in state.resources(SITE, ("pending", "failed"))] == [
            SITE + "index.html"
        ]
        state.remember_seed(SITE, SITE + "index.html", _capture("<urn:uuid:3>"))
        listed = state.get(SITE + "index.html")
        assert listed is not None and (listed.status, listed.record_id) == ("pending", None)
