"""The profile of one crawl of ours under ``py-spy record`` (``bench crawl --profile``): each
part of the crawl's share of the samples (:data:`BUCKETS`) and the functions with the most
time of their own, read from py-spy's raw (collapsed) stacks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

PROFILE_TOP = 12  # functions listed by their own time


# Where a sample of our crawl goes: the first bucket, in this order, whose marks match its
# stack (``path``: a mark in some frame; ``none``: in no frame) or its innermost frame
# (``leaf``: a function name). py-spy charges a C call to the Python line that made it, so
# the fsync of each WARC group shows as the own time of ``write_group``, and zlib's as that
# of warcio's gzip wrapper.
STARTUP = "start-up: imports, the CLI"
BUCKETS: list[tuple[str, str, tuple[str, ...]]] = [
    (STARTUP, "path", ("<frozen importlib",)),
    (STARTUP, "none", ("Harvest.run ",)),
    ("CDXJ index (lines made as records are written; files read back)", "path",
     ("Harvest._index ", "harvester/archive/cdx/index.py")),
    ("fsync of each WARC group (--durable only)", "leaf", ("RotatingWARCWriter.write_group",)),
    ("gzip (warcio: a new level-9 compressor per record)", "leaf", ("GzippingWrapper.",)),
    ("DIDL records", "path", ("harvester/archive/didl.py", "Recorder._didl ")),
    ("other WARC record building and writing (warcio)", "path",
     ("harvester/archive/warc.py", "harvester/archive/recorder.py")),
    ("link extraction", "path", ("harvester/crawl/links.py", "harvester/crawl/bodytext.py")),
    ("SQLite state", "path", ("harvester/storage/",)),
    ("HTTP fetch (aiohttp)", "path", ("harvester/http/fetch.py",)),
    ("seen-URL test", "path",
     ("harvester/crawl/seen/seenset.py", "harvester/crawl/seen/clockcache.py",
      "harvester/crawl/seen/fingerprintfile.py")),
    ("frontier, scope, scores, scheduler", "path", ("harvester/crawl/",)),
]  # fmt: skip
OTHER = "event loop, sockets, other"


def stacks(raw: Path) -> Iterator[tuple[list[str], int]]:
    """py-spy's raw (collapsed) output: each stack, outermost frame first, and its samples."""
    with open(raw, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack and count.isdigit():
                yield stack.split(";"), int(count)


def breakdown(raw: Path) -> dict[str, float]:
    """Each bucket's share of the samples, largest first; the shares add up to 1."""
    counts: Counter[str] = Counter()
    for frames, count in stacks(raw):
        counts[_bucket(frames)] += count
    total = sum(counts.values()) or 1
    return {name: n / total for name, n in counts.most_common()}


def _bucket(frames: list[str]) -> str:
    leaf = frames[-1]
    for name, where, marks in BUCKETS:
        if where == "leaf" and leaf.startswith(marks):
            return name
        found = any(m in f for f in frames for m in marks)
        if (where == "path" and found) or (where == "none" and not found):
            return name
    return OTHER


def own_time(raw: Path, top: int) -> list[tuple[str, float]]:
    """The ``top`` functions by their own share of the samples (``module.function``)."""
    counts: Counter[str] = Counter()
    for frames, count in stacks(raw):
        counts[_function(frames[-1])] += count
    total = sum(counts.values()) or 1
    return [(name, n / total) for name, n in counts.most_common(top)]


def _function(frame: str) -> str:
    """``name (path/to/module.py:12)`` -> ``module.name``."""
    name, _, where = frame.partition(" (")
    module = where.split(":")[0].rsplit("/", 1)[-1].removesuffix(".py")
    return f"{module}.{name}" if module else name


def profile_notes(raw: Path) -> list[str]:
    shares = breakdown(raw)
    own = own_time(raw, PROFILE_TOP)
    return [
        "profile (py-spy, one more crawl of ours; each sample to the first bucket that holds "
        "it): " + "; ".join(f"{name} {share:.0%}" for name, share in shares.items()),
        "profile, own time: " + ", ".join(f"{name} {share:.1%}" for name, share in own),
    ]
