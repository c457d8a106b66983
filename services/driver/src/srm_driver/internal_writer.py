"""A producer for internal records (progress, offset syncs, heartbeats): acks=all,
idempotent, and every write waited for, so a batch is only recorded as done after its
records are on the broker."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, Producer

from srm_driver.kafka_admin import KafkaAdminError


def producer_config(config: Mapping[str, str], *, timeout_ms: int | None = None) -> dict[str, Any]:
    """The keys of an internal writer's producer (the composition root builds it):
    ``config`` with idempotence, acks=all, no linger and murmur2 partitioning."""
    # A bounded delivery timeout: a write that could not land within it never lands
    # later (progress and offset syncs of a driver that lost its lease must not).
    bounded = {} if timeout_ms is None else {"message.timeout.ms": timeout_ms}
    return {
        **config,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 0,
        "partitioner": "murmur2_random",
        **bounded,
    }


class InternalWriter:
    """Writes (key, value) records to one topic and waits for them, with a producer made
    from :func:`producer_config`.

    ``partition`` 0 for MM2's single-partition topics; None to partition by key with
    murmur2, as Java's default partitioner does (Connect's offsets topic).
    """

    def __init__(self, topic: str, producer: Producer, *, partition: int | None = 0) -> None:
        self.topic = topic
        self._partition = {} if partition is None else {"partition": partition}
        self._producer = producer

    def write(self, records: Iterable[tuple[bytes, bytes]], *, timeout: float = 60) -> int:
        """Write and wait for every acknowledgement; raises if any write failed. Safe from
        several threads: each call sees only its own records' failures."""
        errors: list[str] = []

        def delivered(error: KafkaError | None, _message: object) -> None:
            if error is not None:
                errors.append(str(error))

        count = 0
        for key, value in records:
            while True:
                try:
                    self._producer.produce(
                        self.topic, key=key, value=value, on_delivery=delivered, **self._partition
                    )
                    break
                except BufferError:
                    self._producer.poll(0.1)
            count += 1
        if count:
            remaining = self._producer.flush(timeout)
            if remaining or errors:
                raise KafkaAdminError(
                    f"could not write to {self.topic}: {remaining} unacknowledged,"
                    f" {'; '.join(errors[:3]) or 'timed out'}"
                )
        return count

    def close(self) -> None:
        self._producer.flush(10)
