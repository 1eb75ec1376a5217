"""A fetch's records built by hand are the records warcio builds and writes (issue 15).

Each group is written twice from the same exchanges, by two writers with the same clock and
record IDs: once as the recorder writes it (:mod:`harvester.archive.capturegroup`), once with
that path turned off, so the recorder falls back on warcio's builder and writer. Every record
must decompress to the same bytes, every CDXJ line and every capture returned must be the same
(but for what depends on the compressed sizes, which differ: see :data:`MASKS`), each CDXJ
line must point at its record, and the files must pass the verify command's checks.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import io
import json
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.archive import capturegroup, recordbytes
from harvester.archive.recordbytes import sha1_base32
from harvester.archive.recorder import Recorder
from harvester.archive.repair import verify_warc
from harvester.http.exchange import HttpExchange
from harvester.http.fetch import Fetcher
from harvester.http.limits import fetch_settings
from harvester.settings import defaults
from harvester.storage.protocol import Capture, Resource
from tests.fixedwriter import fixed_writer
from tests.servers import RunningServer, start_wsgi

QUIET = replace(defaults(), ignore_robots=True, max_retries=0)


@pytest.fixture(scope="module")
def site() -> Iterator[RunningServer]:
    with start_wsgi("tests.apps:hello", {"greeting": "page"}) as server:
        yield server


def fetched(urls: list[str]) -> list[HttpExchange]:
    async def main() -> list[HttpExchange]:
        async with Fetcher(fetch_settings(QUIET)) as fetcher:
            return [await fetcher.fetch(url, follow_redirects=False) for url in urls]

    return asyncio.run(main())


def pending(url: str) -> Resource:
    return Resource(url, f"oai:{url}", "2024-04-30T08:00:00Z", set_specs=("text",))


def archived(url: str, body: bytes) -> Resource:
    """``url`` as the state knows it after a capture of ``body``."""
    digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    sha1, sha256 = hashlib.sha1(body).hexdigest(), hashlib.sha256(body).hexdigest()
    return replace(
        pending(url),
        status="archived",
        etag='"v1"',
        payload_digest=digest,
        sha1=sha1,
        sha256=sha256,
        record_id="<urn:uuid:00000000-0000-4000-8000-00000000beef>",
        warc_file="earlier.warc.gz",
        warc_offset=10,
        warc_length=20,
        warc_date="2024-04-30T08:00:01.000000Z",
    )


Case = tuple[Resource, HttpExchange, list[str] | None, list[HttpExchange]]


def cases(server: RunningServer) -> list[Case]:
    one, two, gone = fetched([f"{server.url}/one", f"{server.url}/two", f"{server.url}/x"])
    hop = replace(one, status=301, reason="Moved", body=b"moved\n",
                  response_headers=(*one.response_headers, ("Location", two.url)))  # fmt: skip
    not_modified = replace(one, status=304, reason="Not Modified", body=b"")
    return [
        (pending(one.url), one, None, []),
        (pending(two.url), two, [f"{server.url}/a", f"{server.url}/b?c=d"], []),
        (pending(hop.url), hop, None, [two]),
        (pending(one.url), replace(one, truncated="length", reason=""), None, []),
        (pending(one.url), replace(one, truncated="time", peer_ip=None), None, []),
        (pending(gone.url), replace(gone, peer_ip=""), None, []),
        (archived(one.url, one.body), one, None, []),
        (archived(one.url, one.body), not_modified, [], []),
        (replace(archived(one.url, b"x"), record_id=None), one, None, []),
    ]


def record_all(directory: Path, groups: list[Case]) -> tuple[list[Capture], list[str], Path]:
    lines: list[str] = []
    out = fixed_writer(directory, lines)
    recorder = Recorder(out, strategy="oai-get", endpoint="http://127.0.0.1/oai")
    captures = []
    for res, result, outlinks, followed in groups:
        capture, unchanged = recorder.fetched(res, result, outlinks, followed)
        captures.append(capture)
        assert unchanged == (res.record_id is not None)
    out.close()
    (path,) = directory.glob("*.warc.gz")
    return captures, lines, path


# What may differ: the file's name, and what depends on the compressed size of a record (both
# paths compress at level 6, the hand-built one with a window sized to the record) or on the
# moment a DIDL record is made (its random document ID, the harvest time).
MASKS = [
    re.compile(rb'(DIDLDocumentId="|<pres:harvestTime>|offset="|length=")[^"<]*'),
    re.compile(rb'("offset": "|"length": ")[0-9]*'),
]
DIDL_HEAD = re.compile(rb"(WARC-Block-Digest: |WARC-Payload-Digest: |Content-Length: )[^\r]*")


def masked(data: bytes, name: str) -> bytes:
    data = data.replace(name.encode(), b"NAME")
    for mask in MASKS:
        data = mask.sub(rb"\1", data)
    if b"<didl:DIDL" in data:  # its digests and length follow from what is masked
        data = DIDL_HEAD.sub(rb"\1", data)
    return data


def members(path: Path) -> list[bytes]:
    """Every gzip member of the file, decompressed and masked (:data:`MASKS`)."""
    data, found = path.read_bytes(), []
    while data:
        inflater = zlib.decompressobj(31)
        found.append(masked(inflater.decompress(data), path.name))
        data = inflater.unused_data
    return found


def lines_read_back(path: Path, lines: list[str]) -> None:
    """Each CDXJ line points at the gzip member of the capture it describes."""
    data = path.read_bytes()
    for line in lines:
        fields = json.loads(line.split(" ", 2)[2])
        start, length = int(fields["offset"]), int(fields["length"])
        record = zlib.decompressobj(31).decompress(data[start : start + length])
        assert f"WARC-Target-URI: {fields['url']}\r\n".encode() in record
        assert f": {fields['digest']}\r\n".encode() in record


def test_hand_built_groups_are_the_bytes_warcio_writes(
    site: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups = cases(site)
    ours = record_all(tmp_path / "ours", groups)
    monkeypatch.setattr(capturegroup, "group", lambda *args, **kwargs: None)
    reference = record_all(tmp_path / "warcio", groups)
    assert members(ours[2]) == members(reference[2])
    lines_read_back(ours[2], ours[1])
    extra = sum(2 * len(followed) + (outlinks is not None) for _r, _e, outlinks, followed in groups)
    assert len(members(ours[2])) == 1 + 3 * len(groups) + extra  # warcinfo first
    named = [masked(c.encode(), ours[2].name) for c in ours[1]]
    assert named == [masked(c.encode(), reference[2].name) for c in reference[1]]
    assert [replace(c, warc_file="", warc_offset=0, warc_length=0) for c in ours[0]] == [
        replace(c, warc_file="", warc_offset=0, warc_length=0) for c in reference[0]
    ]
    verify_warc(ours[2])


def test_a_head_that_is_not_ascii_is_left_to_warcio(site: RunningServer, tmp_path: Path) -> None:
    (one,) = fetched([f"{site.url}/one"])
    odd = replace(one, response_headers=(*one.response_headers, ("X-Name", "caf\xe9")))
    assert capturegroup.group(lambda: ("<urn:x>", "2024"), odd, "sha1:X", None) is None
    captures, _lines, path = record_all(tmp_path, [(pending(odd.url), odd, None, [])])
    (response,) = [m for m in members(path) if b"WARC-Type: response" in m]
    assert b"X-Name: caf%C3%A9" in response or b"X-Name*=UTF-8''caf%C3%A9" in response
    assert captures[0].warc_offset > 0
    verify_warc(path)


def test_sha1_in_base_32_as_base64_spells_it() -> None:
    for n in range(2000):
        digest = hashlib.sha1(n.to_bytes(4, "big")).digest()
        assert sha1_base32(digest) == base64.b32encode(digest).decode("ascii")


# A resource carried by value in an oai_didl record (strategy didl): with the provider's headers
# a response record, without them a resource record; each closed by its DIDL record.
CARRIED = [
    ("http://127.0.0.1/a.txt", "text/plain", b"carried text\n" * 50,
     [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "650"),
      ("Last-Modified", "Tue, 30 Apr 2024 08:00:00 GMT"), ("ETag", '"a1"')]),
    ("http://127.0.0.1/b.bin", "application/octet-stream", bytes(range(256)) * 400, None),
    ("http://127.0.0.1/c.bin", "image/png", b"", []),
    ("http://127.0.0.1/d.txt", "text/plain", b"caf\xc3\xa9", [("X-Name", "caf\xe9")]),
    ("http://127.0.0.1/e.txt", "text/pl\xe4in", b"odd type", None),
]  # fmt: skip


def record_carried(directory: Path) -> tuple[list[Capture], list[str], Path]:
    lines: list[str] = []
    out = fixed_writer(directory, lines)
    recorder = Recorder(out, strategy="oai-didl", endpoint="http://127.0.0.1/oai")
    captures = [
        recorder.carried(pending(url), url, mime, body, headers)[0]
        for url, mime, body, headers in CARRIED
    ]
    out.close()
    (path,) = directory.glob("*.warc.gz")
    return captures, lines, path


def test_carried_records_built_by_hand_are_the_bytes_warcio_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = record_carried(tmp_path / "ours")
    monkeypatch.setattr(capturegroup, "carried", lambda *args, **kwargs: None)
    reference = record_carried(tmp_path / "warcio")
    assert members(ours[2]) == members(reference[2])
    # warcinfo first; each: its record, the note naming where it came from, its DIDL
    assert len(members(ours[2])) == 1 + 3 * len(CARRIED)
    kinds = [m.split(b"\r\n")[1] for m in members(ours[2])[1::3]]
    assert kinds == [b"WARC-Type: " + t for t in (b"response", b"resource", b"resource",
                                                     b"response", b"resource")]  # fmt: skip
    lines_read_back(ours[2], ours[1])
    named = [masked(c.encode(), ours[2].name) for c in ours[1]]
    assert named == [masked(c.encode(), reference[2].name) for c in reference[1]]
    assert [replace(c, warc_file="", warc_offset=0, warc_length=0) for c in ours[0]] == [
        replace(c, warc_file="", warc_offset=0, warc_length=0) for c in reference[0]
    ]
    verify_warc(ours[2])


def test_a_carried_record_with_a_head_or_type_not_ascii_is_left_to_warcio() -> None:
    def built(mime: str, headers: list[tuple[str, str]] | None) -> bool:
        ready = capturegroup.carried_body(b"x", headers)
        stamp = lambda: ("<urn:x>", "2024")  # noqa: E731
        return ready is not None and capturegroup.carried(stamp, "http://h/d", mime, headers,
                                                          ready) is not None  # fmt: skip

    assert not built("text/plain", [("X", "\xe9")])
    assert not built("text/\xe4", None)
    assert not built("text/a\r\nX: y", None)
    assert built("text/plain", None) and built("text/plain", [("X", "y")])


@pytest.mark.parametrize("size", [0, 1, 3, 65_535, 65_536, 300_001])
def test_a_payload_compressed_apart_makes_the_member_compressed_whole(size: int) -> None:
    """A carried file's bytes are compressed in another thread than its record's head: the
    member made of the parts inflates (CRC-32 and length checked) to the same record."""
    payload = (bytes(range(256)) * (size // 256 + 1))[:size]
    if size > 65_536:
        payload = payload[:1000] + hashlib.sha256(payload).digest() * (size // 32)
    args = ("response", ("<urn:uuid:1>", "2024-05-01T12:00:00Z"), "http://h/a", [("X", "y")])
    kwargs = {"content_type": "t", "http": b"HTTP/1.1 200 OK\r\n\r\n", "payload": payload}
    whole = recordbytes.record_member(*args, **kwargs)  # type: ignore[arg-type]
    apart = recordbytes.record_member(*args, **kwargs, compressed=recordbytes.deflated(payload))  # type: ignore[arg-type]
    assert gzip.decompress(apart) == gzip.decompress(whole)
    assert zlib.decompressobj(31).decompress(apart) == gzip.decompress(whole)


def test_a_large_payload_that_does_not_compress_is_stored_as_it_is() -> None:
    """Random mebibytes (a JPEG's, a ZIP's) go into the member as they are, in deflate's
    stored blocks, and a compressible one after them is still compressed; warcio reads the
    record back with both digests right."""
    noise, text = os.urandom(2 * recordbytes.CHUNK_BYTES), b"<p>compressible</p>\n" * 60_000
    payload = noise + text
    http = b"HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\n\r\n"
    member = recordbytes.record_member(
        "response", ("<urn:uuid:1>", "2024-05-01T12:00:00Z"), "http://h/a.jpg", [],
        content_type="application/http; msgtype=response", http=http, payload=payload,
    )  # fmt: skip
    second = recordbytes.CHUNK_BYTES  # a stored block holds up to 65,535 bytes
    assert noise[:65_535] in member and noise[second : second + 65_535] in member, "stored"
    assert len(member) < len(noise) + len(text) // 10, "the text part still compressed"
    read = [
        r.content_stream().read()
        for r in ArchiveIterator(io.BytesIO(member), check_digests="raise")
    ]
    assert read == [payload]
