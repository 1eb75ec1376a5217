"""Datestamps let a harvester miss nothing: ``from=`` returns exactly what changed."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from urllib.parse import quote

from sickle import Sickle

from server_module.index.fileindex import FileIndex
from tests.conftest import OAI, OAIClient, start_provider
from tests.sites import make_site


def _refresh(root: Path, index: Path, base: str) -> None:
    with FileIndex(index, root, base) as idx:
        idx.refresh()


def _harvest(url: str, **params: str) -> dict[str, bool]:
    sickle = Sickle(url + "/oai")
    try:
        return {
            h.identifier: h.deleted
            for h in sickle.ListIdentifiers(metadataPrefix="oai_dc", **params)
        }
    except Exception as exc:  # sickle raises NoRecordsMatch for an empty list
        if type(exc).__name__ == "NoRecordsMatch":
            return {}
        raise


def test_copy_edit_delete_are_exactly_the_changes(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=30)
    old = tmp_path / "old.txt"
    old.write_text("an old file\n")
    os.utime(old, (946684800, 946684800))  # 2000-01-01
    index = tmp_path / "idx.sqlite"
    with start_provider(site.root, index, page_size=5) as server:
        time.sleep(1.1)  # the next harvest's responseDate must be a later second than the index
        root = OAIClient(server).get(verb="Identify")
        since = root.findtext(f"{OAI}responseDate")
        assert len(_harvest(server.url)) == len(site.public)
        time.sleep(1.1)

        shutil.copy2(old, site.root / "docs" / "copied.txt")  # cp -p: an old mtime
        edited = site.root / "docs" / "page1.html"
        if not edited.exists():
            edited = next(site.root.glob("**/page*.html"))
        st = edited.stat()
        data = edited.read_bytes()
        edited.write_bytes(data.replace(b"<h1>", b"<h1>X", 1)[: len(data)])  # same size
        os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime restored
        (site.root / "files" / "empty.txt").unlink()
        _refresh(site.root, index, server.url)

        changes = _harvest(server.url, **{"from": since})
    rel = edited.relative_to(site.root).as_posix()
    assert changes == {
        f"{server.url}/docs/copied.txt": False,
        f"{server.url}/{rel}": False,
        f"{server.url}/files/empty.txt": True,
    }


def test_a_list_is_bounded_at_its_start(tmp_path: Path) -> None:
    """A record changed mid-list is neither duplicated nor lost: it moves to the next harvest."""
    site = make_site(tmp_path / "www", pages=30)
    index = tmp_path / "idx.sqlite"
    with start_provider(site.root, index, page_size=5) as server:
        time.sleep(1.1)
        client = OAIClient(server)
        first = client.get(verb="ListIdentifiers", metadataPrefix="oai_dc")
        started = first.findtext(f"{OAI}responseDate")
        seen = [h.text for h in first.iter(f"{OAI}identifier")]
        token = first.findtext(f".//{OAI}resumptionToken")
        time.sleep(1.1)
        # change a file that this list has not delivered yet
        victim = sorted(site.public - {p.split(server.url + "/", 1)[-1] for p in seen})[-1]
        (site.root / victim).write_bytes(b"changed during the harvest")
        _refresh(site.root, index, server.url)
        while token:
            page = client.get(verb="ListIdentifiers", resumptionToken=token)
            seen += [h.text for h in page.iter(f"{OAI}identifier")]
            token = page.findtext(f".//{OAI}resumptionToken")
        assert len(seen) == len(set(seen)), "a record was delivered twice in one list"
        later = _harvest(server.url, **{"from": started})
    victim_url = f"{server.url}/{quote(os.fsencode(victim), safe='/')}"
    assert victim_url not in seen
    assert victim_url in later
    assert len(seen) == len(site.public) - 1


def test_expired_token(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=20)
    with start_provider(site.root, tmp_path / "idx.sqlite", page_size=5, token_ttl=1) as server:
        client = OAIClient(server)
        token = client.get(verb="ListIdentifiers", metadataPrefix="oai_dc").findtext(
            f".//{OAI}resumptionToken"
        )
        time.sleep(2.2)
        assert (
            client.error_code(verb="ListIdentifiers", resumptionToken=token) == "badResumptionToken"
        )


def test_token_survives_a_restart(tmp_path: Path) -> None:
    site = make_site(tmp_path / "www", pages=20)
    index = tmp_path / "idx.sqlite"
    with start_provider(site.root, index, page_size=5) as server:
        token = (
            OAIClient(server)
            .get(verb="ListIdentifiers", metadataPrefix="oai_dc")
            .findtext(f".//{OAI}resumptionToken")
        )
    # A new process, on another port, but for the same site (the same base URL).
    with start_provider(site.root, index, page_size=5, base_url=server.url) as again:
        root = OAIClient(again).get(verb="ListIdentifiers", resumptionToken=token)
        assert root.find(f"{OAI}error") is None
        assert len(root.findall(f".//{OAI}header")) == 5
