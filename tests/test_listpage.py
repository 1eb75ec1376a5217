"""Strategy ``didl``: each list page is archived with the bytes it carries by reference to the
records that hold them, and rebuilds to exactly the bytes the provider sent."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest

from harvester.archive.recorder import Payload
from harvester.cli import main
from harvester.listed import listing
from harvester.listed.listpage import ELIDED_PROFILE, ListPages
from tests.recording_provider import sent
from tests.servers import start_wsgi
from tests.sites import Manifest, make_site
from tests.test_harvest import harvest, listed_records, records, url_of


@pytest.fixture(params=[False])
def recorded(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    site = make_site(tmp_path / "www", pages=30, seed=7)
    settings = {
        "record_to": str(tmp_path / "sent"),
        "force_gzip": request.param,
        "docroot": str(site.root),
        "base_url": "http://{host}:{port}",
        "index_path": str(tmp_path / "index.sqlite"),
        "refresh_interval": 0,
        "records_page_size": 7,
    }
    with start_wsgi(
        "tests.recording_provider:create_app", settings, ready_path="/oai?verb=Identify"
    ) as server:
        yield site, server, tmp_path / "sent"


def carried_files(site: Manifest) -> dict[str, bytes]:
    """The public files the provider carries by value, long enough that their base64 text
    cannot turn up anywhere by chance."""
    found = {rel: (site.root / rel).read_bytes() for rel in sorted(site.public)}
    return {rel: data for rel, data in found.items() if 48 <= len(data) <= 1024 * 1024}


def test_each_carried_file_is_archived_once(recorded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, server, _sent = recorded
    harvest(server, tmp_path / "out", oai_strategy="didl")
    # (the seed, the site's root, fetched besides: its bytes are index.html's)
    blocks = [(h.get("WARC-Target-URI"), c) for _t, h, c in listed_records(tmp_path / "out")]
    files = carried_files(site)
    assert len(files) > 20
    for rel, data in files.items():
        encoded = base64.b64encode(data)
        assert [uri for uri, c in blocks if encoded in c] == [], rel
        assert [uri for uri, c in blocks if c == data] == [url_of(server, rel)], rel


def test_each_list_page_rebuilds_to_the_bytes_sent(recorded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _site, server, record_to = recorded
    harvest(server, tmp_path / "out", oai_strategy="didl")
    warcs = sorted((tmp_path / "out" / "warcs").glob("*.warc.gz"))
    pages = ListPages(warcs)
    sent_pages = sent(record_to)
    assert len(pages.elided) >= 4  # 30 pages' files, 7 records a page
    for page in pages.elided:
        rebuilt = pages.rebuild(page.record_id)
        assert hashlib.sha1(rebuilt).hexdigest() in sent_pages
        assert Payload.of(rebuilt).warc_digest == page.payload_digest
        assert page.profile == ELIDED_PROFILE and len(rebuilt) > page.stored_length
    rebuilt_pages = {hashlib.sha1(pages.rebuild(p.record_id)).hexdigest() for p in pages.elided}
    list_pages = {
        name for name in sent_pages if b"<ListRecords>" in (record_to / name).read_bytes()
    }
    assert rebuilt_pages == list_pages, "every ListRecords page is archived, elided"
    assert main(["verify", str(tmp_path / "out")]) == 0  # digests, index lines, captures


@pytest.mark.parametrize("recorded", [True], indirect=True)
def test_a_page_sent_coded_anyway_is_kept_whole(recorded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, server, record_to = recorded
    summary = harvest(server, tmp_path / "out", oai_strategy="didl")
    recs = records(tmp_path / "out")
    endpoint = f"{server.url}/oai?"
    pages = [h for t, h, _c in recs if h.get("WARC-Target-URI", "").startswith(endpoint)]
    assert pages and {h["WARC-Type"] for h in pages} == {"response", "request"}
    received = {h["WARC-Payload-Digest"] for h in pages if h["WARC-Type"] == "response"}
    sent_digests = {
        Payload.of((record_to / name).read_bytes()).warc_digest for name in sent(record_to)
    }
    assert received <= sent_digests, "each page's record holds the bytes sent, gzip and all"
    assert summary["coverage"] == 1.0 and summary["fetched"] == len(site.public)


def test_a_page_whose_archiving_failed_is_listed_again(  # type: ignore[no-untyped-def]
    recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list page's position is saved only once the page is archived: a run that stops in
    between (here a write that fails, as a full disk or a SIGKILL would end it) lists that
    page again next time, so its exchange is not lost."""
    _site, server, _sent = recorded
    real, tried = listing.write_page, []

    def failing_second(recorder: Any, exchange: Any, carried: Any) -> None:
        tried.append(exchange.url)
        if len(tried) == 2:
            raise OSError("no space left on device (injected)")
        real(recorder, exchange, carried)

    monkeypatch.setattr(listing, "write_page", failing_second)
    with pytest.raises(OSError):
        harvest(server, tmp_path / "out", oai_strategy="didl")
    monkeypatch.setattr(listing, "write_page", real)
    harvest(server, tmp_path / "out", oai_strategy="didl")
    # elided, or whole when what it carries was archived before the failure
    archived = {h.get("WARC-Target-URI") for _kind, h, _c in records(tmp_path / "out")}
    assert tried[1] in archived, "the page that failed was archived by the next run"
    assert main(["verify", str(tmp_path / "out")]) == 0
