"""Plain Kafka clients of the harness: topics made and deleted, records produced and read
back, end offsets, a steady producer. Nothing here fakes Kafka, and nothing uses the code
under test: a test's data never depends on what it tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from srm_common.adapters.kafka_reader import watermarks

from srm_harness.records import Record


def admin(bootstrap: str, client: Mapping[str, str] | None = None) -> AdminClient:
    """An admin client; ``client``: more librdkafka keys (a secured cluster's, from
    :meth:`srm_local.secured.SecuredCluster.client_config`)."""
    return AdminClient({"bootstrap.servers": bootstrap, **(client or {})})


def create_topic(
    bootstrap: str,
    name: str,
    *,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    timeout: float = 30,
    client: Mapping[str, str] | None = None,
) -> None:
    """Create a topic and wait until its metadata shows every partition."""
    handle = admin(bootstrap, client)
    topic = NewTopic(
        name, num_partitions=partitions, replication_factor=1, config=dict(config or {})
    )
    handle.create_topics([topic])[name].result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = handle.list_topics(name, timeout=5).topics.get(name)
        if (
            described is not None
            and not described.error
            and len(described.partitions) == partitions
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} did not show {partitions} partitions within {timeout} s")


def delete_topics(
    bootstrap: str,
    names: Iterable[str],
    timeout: float = 30,
    client: Mapping[str, str] | None = None,
) -> None:
    names = list(names)
    if not names:
        return
    handle = admin(bootstrap, client)  # must outlive its futures, or librdkafka destroys the handle
    for future in handle.delete_topics(names, operation_timeout=timeout).values():
        try:
            future.result(timeout)
        except Exception as exc:  # noqa: BLE001 - a topic already gone is fine at clean-up
            if "UNKNOWN_TOPIC" not in str(exc):
                raise


@contextmanager
def broker_setting(bootstrap: str, name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` on every broker of the cluster while the block runs (a
    dynamic setting of each broker: librdkafka cannot name the cluster-wide default),
    then taken out again: the brokers are back on their own setting for the tests that
    follow. Only for settings Kafka changes at run time (``kafka-configs --alter
    --entity-type brokers``)."""
    handle = admin(bootstrap)
    brokers = [str(node.id) for node in handle.describe_cluster().result(30).nodes]

    def alter(operation: AlterConfigOpType, to: str | None) -> None:
        change = ConfigEntry(name, to, incremental_operation=operation)
        resources = [
            ConfigResource(ResourceType.BROKER, broker, incremental_configs=[change])
            for broker in brokers
        ]
        for future in handle.incremental_alter_configs(resources).values():
            future.result(30)

    alter(AlterConfigOpType.SET, value)
    try:
        yield
    finally:
        alter(AlterConfigOpType.DELETE, None)


def list_topics(bootstrap: str, client: Mapping[str, str] | None = None) -> set[str]:
    return set(admin(bootstrap, client).list_topics(timeout=10).topics)


def produce(
    bootstrap: str,
    topic: str,
    records: Sequence[Record],
    *,
    config: Mapping[str, str] | None = None,
) -> None:
    """Produce records in order (idempotent producer, acks=all) and wait for every ack."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            **(config or {}),
        }
    )
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    for record in records:
        kwargs: dict[str, object] = {"key": record.key, "value": record.value}
        if record.headers:
            kwargs["headers"] = list(record.headers)
        if record.timestamp_ms is not None:
            kwargs["timestamp"] = record.timestamp_ms
        if record.partition is not None:
            kwargs["partition"] = record.partition
        while True:
            try:
                producer.produce(topic, on_delivery=on_delivery, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
    remaining = producer.flush(60)
    if remaining or errors:
        raise RuntimeError(f"produce to {topic}: {remaining} unacknowledged, errors {errors[:3]}")


def consume_all(
    bootstrap: str,
    topic: str,
    *,
    isolation_level: str = "read_committed",
    timeout: float = 30,
    client: Mapping[str, str] | None = None,
) -> dict[int, list[Record]]:
    """Read every partition of ``topic`` from its start to the current end (no group)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "srm-test-reader",  # required by librdkafka; nothing is committed
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": True,
            **(client or {}),
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        # A topic made a moment ago is listed before its leader serves it: asked again.
        ends = {p: watermarks(consumer, TopicPartition(topic, p), 30)[1] for p in partitions}
        result: dict[int, list[Record]] = {p: [] for p in partitions}
        pending = {p for p, high in ends.items() if high > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                    continue
                raise RuntimeError(f"consume {topic}: {message.error()}")
            _ts_type, ts = message.timestamp()
            result[message.partition()].append(
                Record(
                    key=message.key(),
                    value=message.value(),
                    headers=tuple(message.headers() or ()),
                    timestamp_ms=ts,
                    partition=message.partition(),
                    offset=message.offset(),
                )
            )
            if message.offset() + 1 >= ends[message.partition()]:
                pending.discard(message.partition())
        if pending:
            raise TimeoutError(f"consume {topic}: partitions {sorted(pending)} not read to the end")
        return result
    finally:
        consumer.close()


_LEADERLESS = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
}


def end_offsets(
    bootstrap: str, topic: str, client: Mapping[str, str] | None = None
) -> dict[int, int]:
    """High watermark of every partition of ``topic`` (empty if it does not exist).

    A topic just deleted or recreated has partitions without a leader for a moment: such
    an answer is retried for up to 10 s."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return _end_offsets(bootstrap, topic, client)
        except KafkaException as exc:
            error = exc.args[0]
            if time.monotonic() > deadline or not (
                error.retriable() or error.code() in _LEADERLESS
            ):
                raise
            time.sleep(0.5)


def _end_offsets(
    bootstrap: str, topic: str, client: Mapping[str, str] | None = None
) -> dict[int, int]:
    described = admin(bootstrap, client).list_topics(topic, timeout=10).topics.get(topic)
    if described is None or described.error is not None:
        return {}
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "srm-test-offsets", **(client or {})}
    )
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in described.partitions
        }
    finally:
        consumer.close()


class SteadyProducer(threading.Thread):
    """Numbered records, key k<n>, a header, round robin over partitions, ~1500/s
    (``per_tick`` records every 50 ms: 75), compressed with ``codec``."""

    def __init__(
        self, bootstrap: str, topic: str, partitions: int, per_tick: int = 75, codec: str = "none"
    ) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.partitions = partitions
        self.per_tick = per_tick
        self.stop = threading.Event()
        self.sent = 0
        self.errors: list[str] = []
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "compression.type": codec,
            }
        )

    def run(self) -> None:
        while not self.stop.is_set():
            for _ in range(self.per_tick):
                n = self.sent
                self._producer.produce(
                    self.topic,
                    key=f"k{n}".encode(),
                    value=f"record {n} ".encode() * 20,
                    headers=[("seq", str(n).encode())],
                    partition=n % self.partitions,
                    on_delivery=self._delivered,
                )
                self.sent += 1
            self._producer.poll(0)
            time.sleep(0.05)
        if self._producer.flush(60):
            self.errors.append("unflushed records")

    def _delivered(self, error, _message) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            self.errors.append(str(error))

    def finish(self) -> None:
        """Stop producing; every record sent must have been acknowledged."""
        self.stop.set()
        self.join(60)
        assert not self.errors, f"the producer failed: {self.errors[:3]}"
