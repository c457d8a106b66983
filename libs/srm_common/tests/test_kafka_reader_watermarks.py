"""A partition's watermarks are asked again while its new leader does not serve it yet
(adapters/kafka_reader.watermarks); other errors are raised at once."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from srm_common.adapters import kafka_reader

TP = TopicPartition("t", 0)


class FakeConsumer:
    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.asked = 0

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, int):
            raise KafkaException(KafkaError(answer))
        return answer  # type: ignore[return-value]


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_reader.time, "sleep", lambda _s: None)


def test_a_leader_not_serving_yet_is_asked_again() -> None:
    consumer = FakeConsumer(
        KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, (3, 7)
    )
    assert kafka_reader.watermarks(consumer, TP, 10) == (3, 7)  # type: ignore[arg-type]
    assert consumer.asked == 3


def test_another_error_is_raised_at_once() -> None:
    consumer = FakeConsumer(KafkaError.TOPIC_AUTHORIZATION_FAILED, (3, 7))
    with pytest.raises(KafkaException):
        kafka_reader.watermarks(consumer, TP, 10)  # type: ignore[arg-type]
    assert consumer.asked == 1


def test_a_leader_that_never_serves_is_raised_after_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    monkeypatch.setattr(kafka_reader.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(kafka_reader.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    consumer = FakeConsumer(*[KafkaError.NOT_LEADER_FOR_PARTITION] * 100)
    with pytest.raises(KafkaException):
        kafka_reader.watermarks(consumer, TP, 1.0)  # type: ignore[arg-type]
    assert 2 <= consumer.asked <= 6
