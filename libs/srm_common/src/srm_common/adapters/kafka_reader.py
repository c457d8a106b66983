"""Reading partitions from a position to their end: the one loop every reader uses.

The progress store reads its topic to the end at start-up, a shared (identity policy)
restart scans the remote partition for its last copy, a restart compares the records
past the recorded position with the source's. All three read "from here to where the
partition ended when we started", which :func:`read_partitions` does with a
deadline and errors named for what failed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from srm_driver.kafka_admin import KafkaAdminError

Key = tuple[str, int]


def read_partitions(
    config: Mapping[str, str],
    starts: Mapping[Key, int],
    *,
    what: str,
    isolation: str = "read_uncommitted",
    limit: int | None = None,
    timeout: float = 60.0,
) -> Iterator[Message]:
    """Messages of every partition in ``starts`` from its start offset (or its log start,
    if later) to its end when the read began, in offset order per partition; at most
    ``limit`` per partition. ``what`` names the read in errors
    (:class:`KafkaAdminError`, also when the end is not reached within ``timeout``).
    """
    consumer = Consumer(
        {
            **config,
            "group.id": "srm-reader",  # librdkafka wants one; nothing is committed
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    try:
        yield from _read(consumer, starts, what, limit, timeout)
    except KafkaException as exc:
        raise KafkaAdminError(f"{what}: {exc}") from exc
    finally:
        consumer.close()


def _read(
    consumer: Consumer, starts: Mapping[Key, int], what: str, limit: int | None, timeout: float
) -> Iterator[Message]:
    ends: dict[Key, int] = {}
    assignment = []
    for (topic, partition), start in starts.items():
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        begin = max(start, low)
        if begin < high and limit != 0:
            ends[(topic, partition)] = high
            assignment.append(TopicPartition(topic, partition, begin))
    if not assignment:
        return
    consumer.assign(assignment)
    counts = dict.fromkeys(ends, 0)
    pending = set(ends)
    deadline = time.monotonic() + timeout
    while pending:
        if time.monotonic() > deadline:
            names = ", ".join(f"{t}-{p}" for t, p in sorted(pending))
            raise KafkaAdminError(f"{what}: could not read {names} to the end within {timeout:g} s")
        message = consumer.poll(0.5)
        if message is None:
            continue
        error = message.error()
        key = (message.topic(), message.partition())
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                pending.discard(key)
                continue
            raise KafkaAdminError(f"{what}: reading {key[0]}-{key[1]}: {error}")
        if key not in pending:
            continue
        yield message
        counts[key] += 1
        if message.offset() + 1 >= ends[key] or (limit is not None and counts[key] >= limit):
            pending.discard(key)
            consumer.pause([TopicPartition(key[0], key[1])])
