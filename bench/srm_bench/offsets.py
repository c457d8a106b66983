"""End offsets of a topic's partitions, read with the admin API."""

from __future__ import annotations

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec


def end_offsets(
    admin: AdminClient, topic: str, partitions: int, timeout: float = 10
) -> dict[int, int]:
    """``{partition: high watermark}``; raises KafkaException when the topic is unknown."""
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    futures = admin.list_offsets(request, request_timeout=timeout)
    return {tp.partition: future.result(timeout).offset for tp, future in futures.items()}


def end_offsets_or_none(
    admin: AdminClient, topic: str, partitions: int, timeout: float = 10
) -> dict[int, int] | None:
    """Like :func:`end_offsets`, but None while the topic (or a partition) does not exist."""
    try:
        return end_offsets(admin, topic, partitions, timeout)
    except KafkaException:
        return None
