"""EventLogReader.poll keeps what it read when an error interrupts a batch (fake consumer)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError
from srm_common.adapters.kafka_log import ControlLogError, EventLogReader
from srm_common.control.events import Envelope, FlowEnabled, encode


class Message:
    def __init__(self, offset: int, value: bytes | None = None, error: KafkaError | None = None):
        self._offset, self._value, self._error = offset, value, error

    def error(self) -> KafkaError | None:
        return self._error

    def value(self) -> bytes | None:
        return self._value

    def offset(self) -> int:
        return self._offset


class FakeConsumer:
    def __init__(self, batches: list[list[Message]]) -> None:
        self.batches = batches

    def consume(self, _count: int, _timeout: float) -> list[Message]:
        return self.batches.pop(0) if self.batches else []

    def position(self, partitions: list[object]) -> list[object]:
        return partitions  # offsets unknown (-1001): the reader keeps its position


def event(offset: int) -> Message:
    return Message(offset, encode(Envelope(FlowEnabled(f"f{offset}"), 1, "t")))


def reader(batches: list[list[Message]]) -> EventLogReader:
    log = EventLogReader.__new__(EventLogReader)
    log.topic = "srm-control.events.internal"
    log.at_end = False
    log.position = -1
    log._carried = []
    log._consumer = FakeConsumer(batches)  # type: ignore[assignment]
    return log


def test_events_of_a_batch_with_an_error_are_returned_by_the_next_poll() -> None:
    broken = Message(-1, error=KafkaError(KafkaError._TRANSPORT))  # noqa: SLF001
    log = reader([[event(0), event(1), broken, event(2)], [event(3)]])
    with pytest.raises(ControlLogError):
        log.poll()
    assert [e.offset for e in log.poll()] == [0, 1, 2, 3]


def test_end_of_partition_sets_at_end() -> None:
    eof = Message(1, error=KafkaError(KafkaError._PARTITION_EOF))  # noqa: SLF001
    log = reader([[event(0), eof]])
    assert [e.offset for e in log.poll()] == [0]
    assert log.at_end
