"""The pooled record and document IDs (``archive.randomids.fresh_uuid``): version-4 UUIDs, never
handed out twice, neither across a fork nor between threads."""

from __future__ import annotations

import os
import threading
import uuid

from harvester.archive.randomids import fresh_uuid


def test_a_forked_process_never_hands_out_its_parents_pooled_ids() -> None:
    fresh_uuid()  # the parent's pool now holds a batch the child inherits
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next IDs, then out at once
        try:
            os.write(writing, "\n".join(fresh_uuid() for _ in range(20)).encode())
        finally:
            os._exit(0)
    os.close(writing)
    with os.fdopen(reading, "rb") as pipe:
        child = set(pipe.read().decode().split("\n"))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    parent = {fresh_uuid() for _ in range(20)}
    assert len(child) == 20
    assert not child & parent


def test_threads_share_the_pool_without_repeats_or_errors() -> None:
    taken: list[list[str]] = [[] for _ in range(8)]
    errors: list[BaseException] = []

    def take(into: list[str]) -> None:
        try:
            into.extend(fresh_uuid() for _ in range(2000))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=take, args=(into,)) for into in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    ids = [text for into in taken for text in into]
    assert len(ids) == len(set(ids)) == 16_000
    assert {uuid.UUID(text).version for text in ids} == {4}
