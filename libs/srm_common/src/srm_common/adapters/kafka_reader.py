"""Reading partitions from a position to their end: the one loop every reader uses.

The driver's progress store reads its topic to the end at start-up, a shared (identity
policy) restart scans the remote partition for its last copy, a restart compares the
records past the recorded position with the source's; offset translation reads the
offset syncs and the progress (checkpoint tasks, srm-control offsets and failover). All
read "from here to where the
partition ended when we started", which :func:`read_partitions` does with a
deadline and errors named for what failed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from srm_common.adapters import kafka_clients
from srm_common.errors import SrmError

Key = tuple[str, int]


class KafkaReadError(SrmError):
    """Partitions could not be read to their end (the message names the read)."""


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
    (:class:`KafkaReadError`, also when the end is not reached within ``timeout``).
    """
    consumer = _reader(config, isolation)
    try:
        yield from _read(consumer, starts, what, limit, timeout)
    except KafkaException as exc:
        raise KafkaReadError(f"{what}: {exc}") from exc
    finally:
        consumer.close()


def _reader(config: Mapping[str, str], isolation: str = "read_uncommitted") -> Consumer:
    return kafka_clients.consumer(
        {
            **config,
            # librdkafka wants one; nothing is committed, but the group is looked up
            # (required_acls.READER_GROUP grants DESCRIBE on it).
            "group.id": "srm-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )


# What a partition's leader answers while it does not serve the partition yet: just after
# the topic was created or its leader moved (KRaft hands leadership out before the broker
# has taken it up; seen on a topic listed with its leader a moment before).
_NOT_SERVED_YET = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)
_ASK_AGAIN_S = 0.2


def watermarks(consumer: Consumer, partition: TopicPartition, timeout: float) -> tuple[int, int]:
    """The partition's low and high watermarks, asked again while its leader does not
    serve it yet, for up to ``timeout`` seconds; any other error, or that one past the
    timeout, is raised (``KafkaException``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            left = max(deadline - time.monotonic(), _ASK_AGAIN_S)
            low, high = consumer.get_watermark_offsets(partition, timeout=left)
            return low, high
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code not in _NOT_SERVED_YET or time.monotonic() + _ASK_AGAIN_S > deadline:
                raise
            time.sleep(_ASK_AGAIN_S)


def _read_again(
    consumer: Consumer, starts: Mapping[Key, int], what: str, limit: int | None, timeout: float
) -> Iterator[Message]:
    """:func:`_read` on a consumer kept for the next read: what it paused is resumed and
    everything unassigned afterwards (a pause outlives unassign() in librdkafka, and the
    next read would wait on a paused partition)."""
    try:
        yield from _read(consumer, starts, what, limit, timeout)
    finally:
        consumer.resume([TopicPartition(t, p) for t, p in starts])
        consumer.unassign()


def _read(
    consumer: Consumer, starts: Mapping[Key, int], what: str, limit: int | None, timeout: float
) -> Iterator[Message]:
    ends: dict[Key, int] = {}
    assignment = []
    for (topic, partition), start in starts.items():
        low, high = watermarks(consumer, TopicPartition(topic, partition), 10)
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
            raise KafkaReadError(f"{what}: could not read {names} to the end within {timeout:g} s")
        message = consumer.poll(0.5)
        if message is None:
            continue
        error = message.error()
        key = (message.topic(), message.partition())
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                pending.discard(key)
                continue
            raise KafkaReadError(f"{what}: reading {key[0]}-{key[1]}: {error}")
        if key not in pending:
            continue
        yield message
        counts[key] += 1
        if message.offset() + 1 >= ends[key] or (limit is not None and counts[key] >= limit):
            pending.discard(key)
            consumer.pause([TopicPartition(key[0], key[1])])


class TopicTail:
    """Follows every partition of one topic: each :meth:`catch_up` returns the records
    written since the last one, up to the partitions' ends when it started. Used for
    topics read again and again (offset syncs, progress), so nothing is read twice."""

    def __init__(self, config: Mapping[str, str], topic: str, *, timeout: float = 30.0) -> None:
        self.topic = topic
        self._config = dict(config)
        self._timeout = timeout
        self._consumer: Consumer | None = None
        self._next: dict[int, int] = {}
        # The partitions the last catch-up read again from their start, because they end
        # before where this tail was (the topic was deleted and created again, or
        # truncated): what a caller took from them before is void.
        self.rewound: set[int] = set()

    def catch_up(self) -> list[Message]:
        """New records, in offset order per partition; [] while the topic does not exist.
        :class:`KafkaReadError` when the cluster does not answer in time."""
        return list(self.new_records())

    def new_records(self) -> Iterator[Message]:
        """:meth:`catch_up` one record at a time (a first read of a large topic is not
        held in memory at once)."""
        what = f"reading {self.topic}"
        self.rewound = set()
        try:
            if self._consumer is None:
                self._consumer = _reader(self._config)
            yield from self._read(self._consumer, what)
        except KafkaException as exc:
            raise KafkaReadError(f"{what}: {exc}") from exc

    def _read(self, consumer: Consumer, what: str) -> Iterator[Message]:
        topics = consumer.list_topics(self.topic, timeout=self._timeout).topics
        metadata = topics.get(self.topic)
        if metadata is None or metadata.error is not None:
            return
        starts = {}
        for partition in sorted(metadata.partitions):
            low, high = watermarks(consumer, TopicPartition(self.topic, partition), self._timeout)
            begin = self._next.get(partition, low)
            if begin > high:
                self.rewound.add(partition)
                begin = low
            begin = max(begin, low)
            if begin < high:
                starts[(self.topic, partition)] = begin
            else:
                self._next[partition] = max(begin, high)
        if not starts:
            return
        for message in _read_again(consumer, starts, what, None, self._timeout):
            self._next[message.partition()] = message.offset() + 1
            yield message

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class FirstRecords:
    """Where the first committed record at or after an offset is, on one cluster, with
    one consumer kept for every question (translation asks each round)."""

    def __init__(self, config: Mapping[str, str], *, timeout: float = 10.0) -> None:
        self._config = dict(config)
        self._timeout = timeout
        self._consumer: Consumer | None = None

    def at_or_after(self, topic: str, partition: int, start: int) -> int | None:
        """Its offset, or None when the partition has no committed record from ``start``
        to its end. :class:`KafkaReadError` when the cluster does not answer in time."""
        what = f"looking at {topic}-{partition}"
        try:
            if self._consumer is None:
                self._consumer = _reader(self._config, "read_committed")
            for message in _read_again(
                self._consumer, {(topic, partition): start}, what, 1, self._timeout
            ):
                return message.offset()
        except KafkaException as exc:
            raise KafkaReadError(f"{what}: {exc}") from exc
        return None

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
