"""A consumer group failing over between clusters, and what it skipped or read twice.

Helpers for tests that move a consumer group from ``primary`` to ``backup`` and back (with
SRM or with MirrorMaker 2) and count the damage an application sees:

* :func:`produce_numbered` writes a topic whose every record value is a unique id
  ``b"<partition>:<seq>"`` (optionally with aborted transactions in between, so offsets
  have holes: aborted records plus their abort markers);
* :func:`consume` reads as an application does: subscribe, ``auto.offset.reset=earliest``,
  commit synchronously what it processed, close (the group becomes empty);
* :class:`Ledger` gathers every id a group read, on either cluster (a replica's values
  are the source's bytes, so ``T`` on primary and ``primary.T`` on backup share ids),
  and tells which records were **skipped** and which were **read twice**;
* :func:`set_group_offsets`, :func:`group_offsets`, :func:`wait_group_empty` and
  :func:`latest_checkpoints` are the operator's side of a failover.

Everything talks to real brokers except :class:`Ledger`, which is pure.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

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

TopicPartitionKey = tuple[str, int]

ABORTED_PREFIX = b"aborted:"


# --- the numbered topic ---------------------------------------------------------------


def record_id(partition: int, seq: int) -> bytes:
    """The value of the ``seq``-th committed record of ``partition``: ``b"<p>:<seq>"``."""
    return f"{partition}:{seq}".encode()


@dataclass
class NumberedTopic:
    """What :func:`produce_numbered` wrote: committed ids per partition in offset order,
    and the values of the records it wrote in aborted transactions (no reader with
    ``read_committed`` ever sees those; a replicator reading uncommitted data copies them
    as ordinary records)."""

    name: str
    ids: dict[int, list[bytes]] = field(default_factory=dict)
    aborted: dict[int, list[bytes]] = field(default_factory=dict)

    @property
    def committed_count(self) -> int:
        return sum(map(len, self.ids.values()))

    @property
    def aborted_count(self) -> int:
        return sum(map(len, self.aborted.values()))

    def extend(self, more: NumberedTopic) -> None:
        """Append a later round of the same topic."""
        for partition, ids in more.ids.items():
            self.ids.setdefault(partition, []).extend(ids)
        for partition, values in more.aborted.items():
            self.aborted.setdefault(partition, []).extend(values)


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


# --- an application's consumer ----------------------------------------------------------


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


# --- the operator's tools --------------------------------------------------------------


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


# --- the ledger ------------------------------------------------------------------------


def _order(position: Mapping[bytes, tuple[int, int]]) -> Callable[[bytes], tuple[int, int, bytes]]:
    """Sort key: source ids by (partition, position), others after them by value."""
    return lambda value: (*position.get(value, (1 << 31, 0)), value)


@dataclass(frozen=True)
class Tally:
    """What a group's reads amount to, over one step or over all of them.

    * ``read``: records processed (foreign ones included);
    * ``skipped``: source records never read although a later record of the same source
      partition was read (for a step: those that became so in that step);
    * ``read_twice``: distinct values read more than once (for a step: those with at
      least one of their reads in that step);
    * ``extra_reads``: reads beyond the first of each value (for a step: its reads of
      values already read before, or earlier in the same step);
    * ``foreign``: values read that are no committed source record, e.g. aborted
      transactional data a replicator copied as ordinary records (each read counts);
    * ``not_reached``: source records after the last one read in their partition
      (after the step, for a step).
    """

    label: str
    read: int
    skipped: tuple[bytes, ...]
    read_twice: tuple[bytes, ...]
    extra_reads: int
    foreign: tuple[bytes, ...]
    not_reached: int

    def __str__(self) -> str:
        parts = [
            f"read {self.read}",
            f"skipped {len(self.skipped)}{_examples(self.skipped)}",
            f"read twice {len(self.read_twice)}{_examples(self.read_twice)}",
        ]
        if self.extra_reads != len(self.read_twice):
            parts.append(f"extra reads {self.extra_reads}")
        parts.append(f"foreign {len(self.foreign)}{_examples(self.foreign)}")
        parts.append(f"not reached {self.not_reached}")
        prefix = f"{self.label}: " if self.label else ""
        return prefix + ", ".join(parts)


def _examples(values: Sequence[bytes], limit: int = 3) -> str:
    if not values:
        return ""
    shown = ", ".join(v.decode(errors="replace") for v in values[:limit])
    more = ", ..." if len(values) > limit else ""
    return f" [{shown}{more}]"


class Ledger:
    """Every id one consumer group read, across clusters and steps.

    ``Ledger(topic.ids)`` knows the source: committed ids per partition in offset order
    (a remote topic holds the same ids at possibly other offsets). ``read(values,
    label)`` records one step's reads and returns that step's :class:`Tally`;
    ``tally()`` is the total. The definitions, for reads R (a multiset) and a source
    partition p with ids p[0..n):

    * h(p) = the highest i with p[i] in R (none: p adds nothing to ``skipped``);
    * skipped = { p[i] : i < h(p), p[i] not in R }  -- a hole the group went past;
    * read_twice = { v : v occurs at least twice in R };
    * foreign = reads of values that are no id of the source;
    * not_reached = #{ p[i] : i > h(p) } (all of p when h(p) is none).
    """

    def __init__(self, source: Mapping[int, Sequence[bytes]] | None = None) -> None:
        self._source: dict[int, list[bytes]] = {}
        self._position: dict[bytes, tuple[int, int]] = {}
        self._counts: Counter[bytes] = Counter()
        self.steps: list[Tally] = []
        if source:
            self.add_source(source)

    def add_source(self, source: Mapping[int, Sequence[bytes]]) -> None:
        """Append records written to the source later (a second round of production)."""
        for partition, ids in sorted(source.items()):
            known = self._source.setdefault(partition, [])
            for value in ids:
                if value in self._position:
                    raise ValueError(f"id {value!r} is already in the source")
                self._position[value] = (partition, len(known))
                known.append(value)

    def read(self, values: Iterable[bytes], label: str = "") -> Tally:
        """Record the values one step read (in any order); the step's tally."""
        step = list(values)
        before = self._counts.copy()
        skipped_before = set(self._skipped(before))
        self._counts.update(step)
        order = _order(self._position)
        in_step = set(step)
        seen: Counter[bytes] = Counter()
        extra = 0
        for value in step:
            if before[value] + seen[value] > 0:
                extra += 1
            seen[value] += 1
        tally = Tally(
            label=label,
            read=len(step),
            skipped=tuple(v for v in self._skipped(self._counts) if v not in skipped_before),
            read_twice=tuple(sorted((v for v in in_step if self._counts[v] > 1), key=order)),
            extra_reads=extra,
            foreign=tuple(sorted((v for v in step if v not in self._position), key=order)),
            not_reached=self._not_reached(self._counts),
        )
        self.steps.append(tally)
        return tally

    def tally(self, label: str = "total") -> Tally:
        """Everything read so far."""
        order = _order(self._position)
        foreign = [v for v, n in self._counts.items() if v not in self._position for _ in range(n)]
        return Tally(
            label=label,
            read=sum(self._counts.values()),
            skipped=tuple(self._skipped(self._counts)),
            read_twice=tuple(sorted((v for v, n in self._counts.items() if n > 1), key=order)),
            extra_reads=sum(n - 1 for n in self._counts.values() if n > 1),
            foreign=tuple(sorted(foreign, key=order)),
            not_reached=self._not_reached(self._counts),
        )

    @property
    def skipped(self) -> tuple[bytes, ...]:
        return tuple(self._skipped(self._counts))

    @property
    def read_twice(self) -> tuple[bytes, ...]:
        return self.tally().read_twice

    def _highest(self, counts: Counter[bytes], ids: Sequence[bytes]) -> int:
        for index in range(len(ids) - 1, -1, -1):
            if counts[ids[index]] > 0:
                return index
        return -1

    def _skipped(self, counts: Counter[bytes]) -> list[bytes]:
        skipped: list[bytes] = []
        for _partition, ids in sorted(self._source.items()):
            highest = self._highest(counts, ids)
            if highest < 0:
                continue
            skipped.extend(v for v in ids[:highest] if counts[v] == 0)
        return skipped

    def _not_reached(self, counts: Counter[bytes]) -> int:
        return sum(
            len(ids) - 1 - self._highest(counts, ids) for _p, ids in sorted(self._source.items())
        )

    def __str__(self) -> str:
        lines = [str(step) for step in self.steps]
        lines.append(str(self.tally()))
        return "\n".join(lines)
