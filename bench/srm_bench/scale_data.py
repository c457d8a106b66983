"""The scale data set: many topics of a few partitions, a few records in each.

``topics`` topics ``scale.t00000``, ``scale.t00001``... of ``partitions`` partitions,
``records`` records of ``record_size`` bytes in every partition (the values of
:func:`srm_bench.dataset.record_values`, no key, no headers). The topics are created in
requests under KRaft's records cap (a bench that could not set itself up at 10,000
partitions would measure nothing), and the load is checked by every partition's end
offset, read in one request per few thousand partitions.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from srm_common.domain.metadata_batches import MAX_RECORDS_PER_REQUEST, chunks, new_topic_records

from srm_bench.dataset import record_values
from srm_bench.progress import say

PREFIX = "scale"
# Partitions whose offsets one ListOffsets request asks for.
OFFSETS_PER_REQUEST = 5000


@dataclass(frozen=True)
class ScaleDataset:
    topics: int
    partitions: int
    records: int
    record_size: int

    @property
    def total_partitions(self) -> int:
        return self.topics * self.partitions

    @property
    def total_records(self) -> int:
        return self.total_partitions * self.records

    def topic_names(self) -> list[str]:
        return [topic_name(index) for index in range(self.topics)]

    def source_partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t in self.topic_names() for p in range(self.partitions)]

    def describe(self) -> dict[str, object]:
        return {
            **asdict(self),
            "total_partitions": self.total_partitions,
            "total_records": self.total_records,
            "mb": round(self.total_records * self.record_size / 2**20, 1),
        }


def topic_name(index: int) -> str:
    return f"{PREFIX}.t{index:05d}"


def topic_pattern() -> str:
    """The flow's ``topics``: every scale topic, the new one of the new-topic phase too."""
    return rf"{PREFIX}\..*"


def create_topics(admin: AdminClient, names: Iterable[str], partitions: int) -> float:
    """Create ``names`` (``partitions`` each, replication factor 1) in requests under the
    controller's cap and wait until all are listed with every partition led; seconds."""
    started = time.monotonic()
    wanted = list(names)
    cost = new_topic_records(partitions, 0)
    for chunk in chunks(wanted, lambda _name: cost, MAX_RECORDS_PER_REQUEST):
        futures = admin.create_topics(
            [NewTopic(name, partitions, 1) for name in chunk], operation_timeout=60
        )
        for future in futures.values():
            future.result(120)
    wait_until_led(admin, wanted, partitions, timeout=300)
    return time.monotonic() - started


def wait_until_led(admin: AdminClient, names: list[str], partitions: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        listed = admin.list_topics(timeout=30).topics
        for name in list(pending):
            topic = listed.get(name)
            if (
                topic is not None
                and topic.error is None
                and len(topic.partitions) == partitions
                and all(p.leader >= 0 for p in topic.partitions.values())
            ):
                pending.discard(name)
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} topics still without leaders after {timeout:.0f} s")
        time.sleep(0.5)


def load(
    bootstrap: str,
    dataset: ScaleDataset,
    names: Iterable[str] | None = None,
    *,
    timeout: float = 300.0,
) -> float:
    """Write ``dataset.records`` records into every partition of ``names`` (default: the
    data set's topics); seconds. Raises when a record is not acknowledged within
    ``timeout`` seconds (librdkafka retries it meanwhile, as leaders come up)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 50,
            "queue.buffering.max.kbytes": 262_144,
            "message.timeout.ms": int(timeout * 1000),
            "log_level": 2,
        }
    )
    errors: list[object] = []
    values = record_values(dataset.record_size)
    started = time.monotonic()
    sent = 0
    for name in names if names is not None else dataset.topic_names():
        for partition in range(dataset.partitions):
            for index in range(dataset.records):
                while True:
                    try:
                        producer.produce(
                            name,
                            values[index % len(values)],
                            partition=partition,
                            on_delivery=lambda err, _m: errors.append(err) if err else None,
                        )
                        break
                    except BufferError:
                        producer.poll(0.05)
                sent += 1
            if sent % 20_000 < dataset.records:
                producer.poll(0)
    left = producer.flush(timeout + 30)
    if left or errors:
        raise RuntimeError(f"loading the scale data set: {left} unacknowledged, {errors[:3]}")
    return time.monotonic() - started


def end_offsets(
    admin: AdminClient, partitions: Iterable[tuple[str, int]], timeout: float = 30
) -> dict[tuple[str, int], int]:
    """High watermarks of ``partitions``, a few thousand per ListOffsets request; a
    partition that does not exist (yet) is left out. Partitions that could not be read
    are asked again once after a listing of the cluster (librdkafka keeps metadata for
    minutes, and would not see topics created since)."""
    wanted = list(partitions)
    found = _end_offsets(admin, wanted, timeout)
    if len(found) < len(wanted):
        try:
            admin.list_topics(timeout=timeout)
        except KafkaException:
            return found
        found.update(_end_offsets(admin, [tp for tp in wanted if tp not in found], timeout))
    return found


def _end_offsets(
    admin: AdminClient, wanted: list[tuple[str, int]], timeout: float
) -> dict[tuple[str, int], int]:
    found: dict[tuple[str, int], int] = {}
    for start in range(0, len(wanted), OFFSETS_PER_REQUEST):
        request = {
            TopicPartition(t, p): OffsetSpec.latest()
            for t, p in wanted[start : start + OFFSETS_PER_REQUEST]
        }
        try:
            futures = admin.list_offsets(request, request_timeout=timeout)
        except KafkaException:
            continue
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = future.result(timeout).offset
            except KafkaException:
                continue
    return found


def check_loaded(admin: AdminClient, dataset: ScaleDataset) -> None:
    ends = end_offsets(admin, dataset.source_partitions())
    wrong = {tp: end for tp, end in ends.items() if end != dataset.records}
    missing = dataset.total_partitions - len(ends)
    if wrong or missing:
        sample = dict(list(wrong.items())[:3])
        raise RuntimeError(f"scale data set: {missing} partitions unread, wrong ends {sample}")


def setup(admin: AdminClient, bootstrap: str, dataset: ScaleDataset) -> Mapping[str, float]:
    """Create and load the data set on the source; seconds each step took."""
    say(
        f"  scale data set: {dataset.topics:,} topics x {dataset.partitions} partitions x"
        f" {dataset.records} records = {dataset.total_records:,} records"
    )
    created = create_topics(admin, dataset.topic_names(), dataset.partitions)
    say(f"  created {dataset.total_partitions:,} partitions in {created:.1f} s")
    loaded = load(bootstrap, dataset)
    check_loaded(admin, dataset)
    say(f"  loaded {dataset.total_records:,} records in {loaded:.1f} s")
    return {"create_seconds": created, "load_seconds": loaded}
