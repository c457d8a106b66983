"""Fakes of the driver's ports shared by its unit tests (the shared fakes of every
package are in :mod:`srm_common.testing`: clock, discovery, the event log), and the
bytes the batch copy's tests hand its protocol layer (:func:`record_batch`,
:func:`produce_answer`). Nothing here talks to Kafka or starts a thread.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import ConfigResource, NewPartitions, NewTopic

from srm_driver.copier.batch_rules import LOG_APPEND_TIME
from srm_driver.copier.wire.batches import CONTROL, CRC_AT, CRC_FROM, crc32c
from srm_driver.copier.wire.primitives import Writer

TS = 1_700_000_000_000  # the first record's timestamp in a record_batch


def record_batch(
    base: int,
    count: int,
    *,
    codec: int = 0,
    producer_id: int = -1,
    transactional: bool = False,
    control: bool = False,
    deltas: Sequence[int] | None = None,
    log_append_time: bool = False,
    timestamp: int = TS,
    headers: bool = False,
    timestamps: Sequence[int] | None = None,
) -> bytes:
    """A v2 record batch (aiokafka builds it) as a source's log holds it at offset
    ``base``: ``count`` records with keys ``k<n>``, values ``v<n>``, timestamps
    ``timestamp + n`` (or ``timestamps``), offset deltas ``deltas`` (else 0, 1, ...) and,
    with ``headers``,
    a header ``h=<n>``; written by ``producer_id`` (epoch and base sequence 0; -1:
    no producer) with the attributes asked for."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=int(transactional),
        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1, batch_size=1 << 20,
    )  # fmt: skip
    for n, delta in enumerate(deltas or range(count)):
        at = timestamps[n] if timestamps is not None else timestamp + n
        builder.append(delta, timestamp=at, key=b"k%d" % n, value=b"v%d" % n,
                       headers=[("h", b"%d" % n)] if headers else [])  # fmt: skip
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)
    if control or log_append_time:
        (attributes,) = struct.unpack_from(">h", raw, CRC_FROM)  # the attributes come first
        attributes |= (CONTROL if control else 0) | (LOG_APPEND_TIME if log_append_time else 0)
        struct.pack_into(">h", raw, CRC_FROM, attributes)
        struct.pack_into(">I", raw, CRC_AT, crc32c(bytes(raw[CRC_FROM:])))  # sealed again
    return bytes(raw)


def produce_answer(*landed: tuple[str, int, int, int]) -> memoryview:
    """A Produce answer's body (v8) with one entry per (topic, partition, error code,
    base offset) in ``landed``; a refusal says "said so"."""
    writer = Writer().array(len(landed))
    for topic, partition, error, base in landed:
        writer.string(topic).array(1).int32(partition).int16(error).int64(base)
        writer.int64(-1).int64(0).array(0).nullable_string("said so" if error else None)
    return memoryview(bytes(writer.int32(0).buffer))


class NoBeats:
    """A :class:`~srm_driver.control.BeatSender` that takes every beat and sends none."""

    def send(self, _beat: object, timeout: float) -> bool:
        return True

    def close(self) -> None:
        pass


class IdleCopy:
    """The copy service as :class:`~srm_driver.runtime.DriverRuntime` sees it, copying
    nothing: it holds no partition, takes what it is handed and resumes none."""

    def held(self, flow: str) -> frozenset[tuple[str, int]]:
        return frozenset()

    def set_owned(self, *_args: object) -> None: ...

    def request_resume(self, *_args: object) -> bool:
        return False

    def stop(self, timeout: float) -> None: ...


class QuietSource:
    """A task source whose assignment never changes (``changed`` is never set unless a
    test sets it), for tests that hand the runtime its assignment themselves."""

    def __init__(self) -> None:
        self.changed = threading.Event()

    def close(self) -> None: ...


class FakeCopyJob:
    """A :class:`~srm_driver.copying.ports.CopyJob` that runs nothing. ``up``: Spark up,
    still starting (False) or failed to start (the exception ``ready`` raises); each
    start is ``job-1``, ``job-2``... (``started`` counts them); ``more``: slots Spark can
    add, handed out once by ``grow``; ``listed``: the executors Spark lists (None: local
    mode, or Spark could not be asked); ``active``: slots still running on this host."""

    slots = 2
    local = True

    def __init__(self) -> None:
        self.job_id: str | None = None
        self.error: str | None = None
        self.up: bool | Exception = True
        self.started = 0
        self.more: list[int] = []
        self.listed: frozenset[str] | None = None
        self.active = 0

    def ready(self) -> bool:
        if isinstance(self.up, Exception):
            raise self.up
        return self.up

    def start(self) -> str:
        self.started += 1
        self.job_id = f"job-{self.started}"
        return self.job_id

    def grow(self) -> list[int]:
        added, self.more = self.more, []
        return added

    def executors(self) -> frozenset[str] | None:
        return self.listed

    def running(self) -> bool:
        return self.job_id is not None

    def cancel(self) -> None:
        self.job_id = None

    def join(self, timeout: float) -> bool:
        return True

    def active_slots(self) -> int:
        return self.active


@dataclass
class _Partition:
    leader: int = 1
    error: object = None


@dataclass
class _Topic:
    partitions: dict[int, _Partition]
    error: object = None


@dataclass
class _Metadata:
    topics: dict[str, _Topic]


@dataclass(eq=False)  # a client, hashable by identity as AdminClient is (adapters/answering.py)
class FakeController:
    """A cluster's admin API as topic sync uses it: the controller's topics (``topics``,
    partition counts) and the metadata its broker answers with. The controller refuses,
    whole, any request generating more than ``cap`` metadata records (one per topic,
    partition and config, as KRaft counts), and answers "already exists" for a topic it
    has. The metadata leaves out ``hidden`` topics (a broker that has not loaded them
    yet; ``hide_created``: every topic created from now on) and shows ``unsettled`` ones
    with ``LEADER_NOT_AVAILABLE``. ``listings`` counts whole-cluster metadata requests,
    ``described_topics`` the names of each request by name, ``entries`` the partition entries
    answered in all, ``requests`` each change request (what, items, records)."""

    cap: int = 10_000
    refusal: str = "Unable to perform excessively large batch operation."
    topics: dict[str, int] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    requests: list[tuple[str, int, int]] = field(default_factory=list)
    hidden: set[str] = field(default_factory=set)
    unsettled: set[str] = field(default_factory=set)
    hide_created: bool = False
    listings: int = 0
    described_topics: list[list[str]] = field(default_factory=list)
    entries: int = 0

    def _shown(self, name: str) -> _Topic | None:
        if name not in self.topics or name in self.hidden:
            return None
        if name in self.unsettled:
            return _Topic({}, KafkaError(KafkaError.LEADER_NOT_AVAILABLE))
        self.entries += self.topics[name]
        return _Topic({p: _Partition() for p in range(self.topics[name])})

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> _Metadata:
        if topic is None:
            self.listings += 1
        names = [topic] if topic is not None else list(self.topics)
        shown = {name: self._shown(name) for name in names}
        return _Metadata({name: t for name, t in shown.items() if t is not None})

    def describe_topics(
        self, topics: TopicCollection, request_timeout: float = 0
    ) -> dict[str, Future[object]]:
        self.described_topics.append(list(topics.topic_names))
        futures: dict[str, Future[object]] = {}
        for name in topics.topic_names:
            shown = self._shown(name)
            if shown is None:
                futures[name] = failed_future(KafkaError.UNKNOWN_TOPIC_OR_PART)
            elif shown.error is not None:
                futures[name] = failed_future(KafkaError.LEADER_NOT_AVAILABLE)
            else:
                futures[name] = done_future(SimpleNamespace(partitions=list(shown.partitions)))
        return futures

    def describe_configs(
        self, resources: list[ConfigResource], request_timeout: float = 0
    ) -> dict[ConfigResource, Future[object]]:
        return {resource: done_future({}) for resource in resources}

    def create_topics(
        self, new_topics: list[NewTopic], operation_timeout: float = 0, request_timeout: float = 0
    ) -> dict[str, Future[object]]:
        records = sum(1 + t.num_partitions + len(t.config) for t in new_topics)
        if self._refused("create", len(new_topics), records):
            return {t.topic: self._refusal() for t in new_topics}
        futures: dict[str, Future[object]] = {}
        for topic in new_topics:
            if topic.topic in self.topics:
                futures[topic.topic] = failed_future(KafkaError.TOPIC_ALREADY_EXISTS)
                continue
            self.topics[topic.topic] = topic.num_partitions
            self.configs[topic.topic] = dict(topic.config)
            if self.hide_created:
                self.hidden.add(topic.topic)
            futures[topic.topic] = done_future(None)
        return futures

    def create_partitions(
        self,
        requests: list[NewPartitions],
        operation_timeout: float = 0,
        request_timeout: float = 0,
    ) -> dict[str, Future[object]]:
        records = sum(r.new_total_count - self.topics[r.topic] for r in requests)
        if self._refused("grow", len(requests), records):
            return {r.topic: self._refusal() for r in requests}
        for request in requests:
            self.topics[request.topic] = request.new_total_count
        return {r.topic: done_future(None) for r in requests}

    def incremental_alter_configs(
        self, resources: list[ConfigResource], request_timeout: float = 0
    ) -> dict[ConfigResource, Future[object]]:
        records = sum(len(r.incremental_configs) for r in resources)
        if self._refused("alter", len(resources), records):
            return {r: self._refusal() for r in resources}
        return {r: done_future(None) for r in resources}

    def _refused(self, what: str, items: int, records: int) -> bool:
        self.requests.append((what, items, records))
        return records > self.cap

    def _refusal(self) -> Future[object]:
        return failed_future(KafkaError.POLICY_VIOLATION, self.refusal)


def done_future(value: object) -> Future[object]:
    future: Future[object] = Future()
    future.set_result(value)
    return future


def failed_future(code: int, message: str | None = None) -> Future[object]:
    """A future failed as librdkafka fails one: a KafkaException of ``code``."""
    future: Future[object] = Future()
    error = KafkaError(code, message) if message is not None else KafkaError(code)
    future.set_exception(KafkaException(error))
    return future
