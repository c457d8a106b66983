"""TopicTail on a real cluster: each catch_up returns exactly what was written since the
last one, however often it is called (offset syncs and progress are followed this way)."""

from __future__ import annotations

import pytest
from srm_common.adapters.kafka_reader import TopicTail
from srm_local import testing
from srm_local.testing import Record

pytestmark = pytest.mark.integration


def test_catch_up_returns_each_new_record_once_round_after_round(kafka, unique_name) -> None:  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("tail"), partitions=3)
    tail = TopicTail({"bootstrap.servers": kafka["primary"]}, topic, timeout=20)
    try:
        assert tail.catch_up() == []
        seen: list[bytes] = []
        for round_ in range(4):  # a finished partition paused in one round must not stall the next
            batch = [Record(None, f"{round_}-{i}".encode(), (), None, i % 3) for i in range(9)]
            testing.produce(kafka["primary"], topic, batch)
            got = [m.value() for m in tail.catch_up()]
            assert sorted(got) == sorted(r.value for r in batch), f"round {round_}"
            seen += got
        assert tail.catch_up() == [] and len(seen) == len(set(seen)) == 36
    finally:
        tail.close()


def test_a_topic_that_does_not_exist_yet_is_empty(kafka, unique_name) -> None:  # type: ignore[no-untyped-def]
    tail = TopicTail({"bootstrap.servers": kafka["primary"]}, unique_name("absent"), timeout=10)
    try:
        assert tail.catch_up() == []
    finally:
        tail.close()
