"""ProgressStore.load reads only what was written since the last load, folded onto what
that one read (a planner asks at every pass while partitions wait for their offsets)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from srm_common.domain.connect_offsets import source_offset_key
from srm_common.domain.progress import Progress
from srm_driver.progress_store import ProgressStore

TOPIC = "mm2-offsets.primary.internal"


@dataclass
class Message:
    partition_: int
    key_: bytes | None
    value_: bytes | None

    def partition(self) -> int:
        return self.partition_

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_


@dataclass
class FakeTail:
    """Hands out the records appended since the last read, like TopicTail."""

    topic: str = TOPIC
    pending: list[Message] = field(default_factory=list)
    rewound: set[int] = field(default_factory=set)
    next_rewound: set[int] = field(default_factory=set)
    reads: int = 0
    handed: int = 0

    def new_records(self) -> Iterator[Message]:
        self.reads += 1
        self.rewound, self.next_rewound = self.next_rewound, set()
        batch, self.pending = self.pending, []
        for message in batch:
            self.handed += 1
            yield message

    def close(self) -> None:
        pass


@dataclass
class FakeWriter:
    topic: str = TOPIC


def progress(n: int) -> Progress:
    return Progress(n, n, n + 10, "S1", "T1")


def record(topic: str, partition: int, n: int | None, *, at: int = 0, source: str = "primary"):  # type: ignore[no-untyped-def]
    value = None if n is None else progress(n).encode_value()
    return Message(at, source_offset_key(source, topic, partition), value)


def store(tail: FakeTail) -> ProgressStore:
    return ProgressStore("primary", admin=None, writer=FakeWriter(), tail=tail)  # type: ignore[arg-type]


def test_each_load_reads_only_the_new_records_and_keeps_the_latest_of_each_partition() -> None:
    tail = FakeTail()
    progress_store = store(tail)
    tail.pending = [record("orders", 0, 5), record("orders", 1, 7, at=1), record("orders", 0, 9)]
    assert dict(progress_store.load()) == {("orders", 0): progress(9), ("orders", 1): progress(7)}
    assert dict(progress_store.load()) == {("orders", 0): progress(9), ("orders", 1): progress(7)}
    assert tail.handed == 3, "nothing read twice"
    tail.pending = [
        record("orders", 1, 20, at=1),
        record("orders", 0, None),  # an offsets reset
        record("other", 0, 3, source="elsewhere"),  # another source's progress
    ]
    assert dict(progress_store.load()) == {("orders", 1): progress(20)}
    assert tail.handed == 6 and tail.reads == 3


def test_what_was_read_from_a_partition_that_starts_again_is_forgotten() -> None:
    tail = FakeTail()
    progress_store = store(tail)
    tail.pending = [record("orders", 0, 5, at=0), record("orders", 1, 7, at=1)]
    progress_store.load()
    tail.next_rewound = {0}  # partition 0 of the topic was created again ...
    tail.pending = [record("orders", 2, 1, at=0)]  # ... and holds this only
    assert dict(progress_store.load()) == {("orders", 1): progress(7), ("orders", 2): progress(1)}
    tail.next_rewound = {1}  # empty after it started again
    assert dict(progress_store.load()) == {("orders", 2): progress(1)}


def test_the_answer_is_read_only() -> None:
    tail = FakeTail(pending=[record("orders", 0, 5)])
    loaded = store(tail).load()
    with pytest.raises(TypeError):
        loaded[("orders", 0)] = progress(1)  # type: ignore[index]


def test_a_tail_of_another_topic_is_refused() -> None:
    with pytest.raises(ValueError, match="mm2-offsets.primary.internal"):
        store(FakeTail(topic="mm2-offsets.backup.internal"))
