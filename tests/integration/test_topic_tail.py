"""TopicTail on a real cluster: each catch_up returns exactly what was written since the
last one, however often it is called (offset syncs and progress are followed this way)."""

from __future__ import annotations

import time

import pytest
from srm_common.adapters.kafka_reader import TopicTail
from srm_harness.clients import create_topic, delete_topics, produce
from srm_harness.records import Record

pytestmark = pytest.mark.integration


def test_catch_up_returns_each_new_record_once_round_after_round(kafka, unique_name) -> None:  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("tail"), partitions=3)
    tail = TopicTail({"bootstrap.servers": kafka["primary"]}, topic, timeout=20)
    try:
        assert tail.catch_up() == []
        seen: list[bytes] = []
        for round_ in range(4):  # a finished partition paused in one round must not stall the next
            batch = [Record(None, f"{round_}-{i}".encode(), (), None, i % 3) for i in range(9)]
            produce(kafka["primary"], topic, batch)
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


def test_a_topic_created_again_is_read_again_from_its_start(kafka, unique_name) -> None:  # type: ignore[no-untyped-def]
    """A partition that ends before where the tail was (the topic deleted and created
    again) is read from its start and named in ``rewound``: the progress store forgets
    what it took from it."""
    topic = kafka.create_topic("primary", unique_name("again"), partitions=1)
    tail = TopicTail({"bootstrap.servers": kafka["primary"]}, topic, timeout=20)
    try:
        produce(kafka["primary"], topic, [Record(None, b"old-%d" % i) for i in range(5)])
        assert len(tail.catch_up()) == 5 and tail.rewound == set()
        delete_topics(kafka["primary"], [topic])
        deadline = time.monotonic() + 60
        while True:  # the deletion finishes in the background
            try:
                create_topic(kafka["primary"], topic, partitions=1)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        produce(kafka["primary"], topic, [Record(None, b"new-%d" % i) for i in range(2)])
        got: list[bytes] = []
        rewound: set[int] = set()
        while len(got) < 2 and time.monotonic() < deadline:
            got += [m.value() for m in tail.catch_up()]
            rewound |= tail.rewound
        assert got == [b"new-0", b"new-1"] and rewound == {0}
    finally:
        tail.close()
