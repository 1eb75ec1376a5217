"""The DIDL builder processes of records mode: a group handed over never waits for the child."""

from __future__ import annotations

import gzip
import os
import signal
import threading
from datetime import UTC, datetime

from harvester.archive.didl import Provenance
from harvester.records.didlbuilder import DidlBuilder, Job

PROVENANCE = Provenance(
    "coop-archive-harvester", "test", datetime(2024, 6, 1, tzinfo=UTC), None, "oai-records"
)


def _jobs(count: int) -> list[Job]:
    return [
        (f"oai:t:{n}", "2024-05-01", (), False, [("oai_dc", b"<dc>%d%s</dc>" % (n, b"x" * 1000))])
        for n in range(count)
    ]


def test_a_large_group_is_handed_over_while_the_child_is_stopped() -> None:
    """A page's group (here 300 KB) fits in the pipe: the parent's send returns at once even
    when the child gets no CPU, instead of waiting for the child to read it chunk by chunk."""
    builder = DidlBuilder()
    jobs = _jobs(300)
    os.kill(builder.pid, signal.SIGSTOP)
    try:
        sender = threading.Thread(target=builder.send, args=(PROVENANCE, None, jobs))
        sender.start()
        sender.join(5)
        handed_over = not sender.is_alive()
    finally:
        os.kill(builder.pid, signal.SIGCONT)
    sender.join(10)
    built = builder.receive()
    builder.close()
    assert handed_over
    assert [len(b) for b in built] == [3] * 300
    assert b"oai:t:299" in gzip.decompress(built[-1][2])
