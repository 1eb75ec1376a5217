"""The batch-made UUIDs are version-4 UUIDs as uuid4 makes them: random, each different."""

from __future__ import annotations

import uuid

from harvester.archive.randomids import uuid4_texts
from harvester.records.didlbuilder import record_ids


def test_each_is_a_random_uuid_in_its_text_form() -> None:
    texts = uuid4_texts(2000)
    parsed = [uuid.UUID(text) for text in texts]
    assert [str(u) for u in parsed] == texts
    assert {u.version for u in parsed} == {4} and {u.variant for u in parsed} == {uuid.RFC_4122}
    assert len(set(texts)) == len(texts)
    # the two free bits after the variant's 10 take every value
    assert {text[19] for text in texts} == set("89ab")


def test_record_ids_are_urns_in_angle_brackets() -> None:
    ids = record_ids(3)
    assert all(i.startswith("<urn:uuid:") and i.endswith(">") for i in ids)
    assert [uuid.UUID(i[10:-1]).version for i in ids] == [4, 4, 4]
