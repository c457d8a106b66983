"""A consumer group failing over between clusters, and what it skipped or read twice.

Helpers for tests that move a consumer group from ``primary`` to ``backup`` and back (with
SRM or with MirrorMaker 2) and count the damage an application sees:

* :func:`produce_numbered` writes a topic whose every record value is a unique id
  ``b"<partition>:<seq>"`` (optionally with aborted transactions in between, so offsets
  have holes: aborted records plus their abort markers);
* :func:`consume` reads as an application does: subscribe, ``auto.offset.reset=earliest``,
  commit synchronously what it processed, close (the group becomes empty);
* :class:`~srm_harness.group_ledger.Ledger` (in :mod:`srm_harness.group_ledger`) gathers
  every id a group read, on either cluster (a replica's values are the source's bytes,
  so ``T`` on primary and ``primary.T`` on backup share ids), and tells which records
  were **skipped** and which were **read twice**;
* :func:`set_group_offsets`, :func:`group_offsets`, :func:`wait_group_empty` and
  :func:`latest_checkpoints` are the operator's side of a failover.

Everything here talks to real brokers; the ledger is pure.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence

from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from srm_common.domain.records import Checkpoint
from srm_common.errors import RecordFormatError

from srm_harness.clients import admin, consume_all, list_topics
from srm_harness.group_ledger import NumberedTopic, record_id

TopicPartitionKey = tuple[str, int]


ABORTED_PREFIX = b"aborted:"


def produce_numbered(
    bootstrap: str,
    topic: str,
    *,
    partitions: int,
    per_partition: int,
    start: int = 0,
    batch: int = 10,
    abort_every: int = 0,
    clean_partitions: Collection[int] = (),
    codec: str = "none",
) -> NumberedTopic:
    """Write ``per_partition`` committed records to each partition of an existing topic,
    values ``record_id(p, seq)`` for ``seq`` in ``start .. start + per_partition - 1``.

    Records go in batches of ``batch`` (idempotent producer, acks=all). With
    ``abort_every = n > 0``, before every n-th batch of a partition not in
    ``clean_partitions`` a transactional producer writes ``batch // 2`` records
    ``b"aborted:<p>:<seq>"`` to that partition and aborts them, so the partition's offsets
    have holes (the aborted records and their abort marker) a ``read_committed`` reader
    never sees. Every write is acknowledged before the next one starts, so the committed
    ids are in offset order. Both producers compress with ``codec``."""
    plain = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "compression.type": codec,
        }
    )
    aborter = _Aborter(bootstrap, topic, codec) if abort_every > 0 else None
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    written = NumberedTopic(topic)
    try:
        for partition in range(partitions):
            ids = written.ids.setdefault(partition, [])
            aborted = written.aborted.setdefault(partition, [])
            seq = start
            number = 0
            while seq < start + per_partition:
                number += 1
                if (
                    aborter is not None
                    and partition not in clean_partitions
                    and number % abort_every == 0
                ):
                    _flush(plain, topic, errors)
                    values = [
                        ABORTED_PREFIX + record_id(partition, seq + i)
                        for i in range(max(batch // 2, 1))
                    ]
                    aborter.write_aborted(partition, values)
                    aborted.extend(values)
                for _ in range(min(batch, start + per_partition - seq)):
                    value = record_id(partition, seq)
                    _produce(plain, topic, value, partition, on_delivery)
                    ids.append(value)
                    seq += 1
            _flush(plain, topic, errors)
    finally:
        if aborter is not None:
            aborter.close()
    return written


class _Aborter:
    """A transactional producer that writes records and aborts them."""

    def __init__(self, bootstrap: str, topic: str, codec: str = "none") -> None:
        self.topic = topic
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"{topic}-aborter-{uuid.uuid4().hex[:8]}",
                "linger.ms": 5,
                "compression.type": codec,
            }
        )
        self.producer.init_transactions(30)
        self.watermarks = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-wm"})

    def write_aborted(self, partition: int, values: Sequence[bytes]) -> None:
        """``values`` in one transaction, aborted. Returns once the abort marker is in
        the log (the coordinator writes it after answering the abort), so the offsets of
        the records written next do not depend on that race."""
        end = self._high_watermark(partition)
        self.producer.begin_transaction()
        for value in values:
            self.producer.produce(self.topic, value=value, partition=partition)
        self.producer.flush(30)
        self.producer.abort_transaction(30)
        deadline = time.monotonic() + 30
        while self._high_watermark(partition) < end + len(values) + 1:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no abort marker in {self.topic}-{partition} after 30 s")
            time.sleep(0.01)

    def _high_watermark(self, partition: int) -> int:
        tp = TopicPartition(self.topic, partition)
        return self.watermarks.get_watermark_offsets(tp, timeout=10)[1]

    def close(self) -> None:
        self.watermarks.close()


def _produce(
    producer: Producer,
    topic: str,
    value: bytes,
    partition: int,
    on_delivery: Callable[[KafkaError | None, object], None],
) -> None:
    while True:
        try:
            producer.produce(topic, value=value, partition=partition, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.1)


def _flush(producer: Producer, topic: str, errors: list[str]) -> None:
    remaining = producer.flush(60)
    if remaining or errors:
        raise RuntimeError(f"produce to {topic}: {remaining} unacknowledged, errors {errors[:3]}")


def consume(
    bootstrap: str,
    topics: Sequence[str],
    group: str,
    max_records: int | None = None,
    *,
    per_partition: int | None = None,
    until: Callable[[Sequence[bytes]], bool] | None = None,
    commit: bool = True,
    timeout: float = 60,
    config: Mapping[str, object] | None = None,
) -> list[bytes]:
    """Read ``topics`` as member of ``group`` the way an application does and return the
    values it processed, in the order it processed them.

    Subscribes (so the group's committed offsets decide where it starts, and
    ``auto.offset.reset=earliest`` where there are none), reads ``read_committed``, and
    stops at the first of: ``max_records`` processed, ``until(values so far)`` true, every
    assigned partition at its end or done. With ``per_partition`` a partition is done
    once that many of its records are processed: it is paused, and records of it still
    delivered are left unprocessed (so, uncommitted), which makes where the group stops
    independent of the order the partitions' records arrive in. With ``commit`` it then
    commits synchronously, per partition, the offset after the last record it processed
    (nothing for partitions it processed nothing from), and closes cleanly, so the group
    is left empty. ``config`` adds consumer settings. TimeoutError if it has not stopped
    within ``timeout`` seconds."""
    assigned: set[TopicPartitionKey] = set()
    at_end: set[TopicPartitionKey] = set()

    def on_assign(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.update((tp.topic, tp.partition) for tp in partitions)

    def on_revoke(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            assigned.discard((tp.topic, tp.partition))

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            **(config or {}),
        }
    )
    values: list[bytes] = []
    next_offsets: dict[TopicPartitionKey, int] = {}
    processed: Counter[TopicPartitionKey] = Counter()
    try:
        consumer.subscribe(list(topics), on_assign=on_assign, on_revoke=on_revoke)
        deadline = time.monotonic() + timeout
        while True:
            if max_records is not None and len(values) >= max_records:
                break
            if until is not None and until(values):
                break
            if assigned and at_end >= assigned:
                break
            if per_partition is not None and assigned:
                done = {k for k in assigned if processed[k] >= per_partition}
                if at_end | done >= assigned:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"consume {list(topics)} as {group}: {len(values)} records read, "
                    f"assigned {sorted(assigned)}, at end {sorted(at_end)} after {timeout} s"
                )
            message = consumer.poll(0.2)
            if message is None:
                continue
            key = (message.topic(), message.partition())
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(key)
                    continue
                raise KafkaException(error)
            if per_partition is not None and processed[key] >= per_partition:
                consumer.pause([TopicPartition(*key)])
                continue
            at_end.discard(key)
            values.append(message.value())
            next_offsets[key] = message.offset() + 1
            processed[key] += 1
        if commit and next_offsets:
            consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(next_offsets.items())],
                asynchronous=False,
            )
    finally:
        consumer.close()
    return values


def group_offsets(bootstrap: str, group: str) -> dict[TopicPartitionKey, int]:
    """The group's committed offsets, ``{(topic, partition): offset}`` (none: ``{}``)."""
    client = admin(bootstrap)
    request = [ConsumerGroupTopicPartitions(group)]
    result = client.list_consumer_group_offsets(request)[group].result(30)
    offsets: dict[TopicPartitionKey, int] = {}
    for tp in result.topic_partitions or []:
        if tp.error is not None:
            raise KafkaException(tp.error)
        if tp.offset >= 0:
            offsets[(tp.topic, tp.partition)] = tp.offset
    return offsets


def set_group_offsets(bootstrap: str, group: str, offsets: Mapping[TopicPartitionKey, int]) -> None:
    """Commit ``offsets`` for ``group`` through the Admin API (what
    ``kafka-consumer-groups --reset-offsets ... --execute`` does); the group must have no
    active member. Other partitions of the group keep their offsets."""
    if not offsets:
        return
    client = admin(bootstrap)
    partitions = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    result = client.alter_consumer_group_offsets(request)[group].result(30)
    failed = [tp for tp in result.topic_partitions or [] if tp.error is not None]
    if failed:
        raise KafkaException(failed[0].error)


def group_state(bootstrap: str, group: str) -> ConsumerGroupState:
    """The group's state as the coordinator describes it (DEAD: no such group)."""
    client = admin(bootstrap)
    return client.describe_consumer_groups([group])[group].result(30).state


def wait_group_empty(bootstrap: str, group: str, timeout: float = 30) -> ConsumerGroupState:
    """Wait until ``group`` has no member (EMPTY, or DEAD when it never existed)."""
    deadline = time.monotonic() + timeout
    while True:
        state = group_state(bootstrap, group)
        if state in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD):
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"group {group} is still {state.name} after {timeout} s")
        time.sleep(0.5)


def latest_checkpoints(
    bootstrap: str, checkpoints_topic: str, group: str
) -> dict[TopicPartitionKey, Checkpoint]:
    """The last checkpoint of ``group`` per downstream partition in ``checkpoints_topic``
    (``<source alias>.checkpoints.internal`` on the target), what
    ``RemoteClusterUtils.translateOffsets`` returns; ``{}`` when the topic does not
    exist. Records that do not decode are skipped, as MirrorClient does."""
    if checkpoints_topic not in list_topics(bootstrap):
        return {}
    latest: dict[TopicPartitionKey, Checkpoint] = {}
    for records in consume_all(bootstrap, checkpoints_topic).values():
        for record in records:
            try:
                checkpoint = Checkpoint.decode(record.key, record.value)
            except RecordFormatError:
                continue
            if checkpoint.consumer_group_id == group:
                latest[(checkpoint.topic, checkpoint.partition)] = checkpoint
    return latest
