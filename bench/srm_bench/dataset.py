"""Loading the fixed data set into the source cluster.

Record ``i`` goes to partition ``i % partitions`` with value ``VALUES[i % 64]``: 64
values of ``record_size`` pseudo-random bytes from a fixed seed, so every run copies
exactly the same bytes and nothing in them compresses. No keys, no headers: Kafka's
producer perf tool, which gives the raw figure, writes the same shape. With ``--codec``
the values are JSON documents of the same size, written compressed with that codec
(:mod:`srm_bench.codec`), 16,384 distinct documents.
"""

from __future__ import annotations

import random
import time

from confluent_kafka import KafkaError, Message, Producer

from srm_bench.codec import json_values
from srm_bench.offsets import end_offsets
from srm_bench.options import Dataset
from srm_bench.progress import Progress, say
from srm_bench.stack import admin_client, create_topic

_DISTINCT_VALUES = 64
_SEED = 20240601


def record_values(record_size: int) -> list[bytes]:
    rng = random.Random(_SEED)
    return [rng.randbytes(record_size) for _ in range(_DISTINCT_VALUES)]


def load_dataset(bootstrap: str, dataset: Dataset) -> float:
    """Create the topic, write the data set, check every partition's end offset.

    Returns the seconds the load took.
    """
    admin = admin_client(bootstrap)
    create_topic(admin, dataset.topic, dataset.partitions)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 262_144,
            "compression.type": dataset.codec or "none",
            "log_level": 2,  # no "coordinator load in progress" retries, no reconnects
        }
    )
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _message: Message) -> None:
        if err is not None:
            errors.append(err)

    values = (
        json_values(dataset.record_size) if dataset.codec else record_values(dataset.record_size)
    )
    progress = Progress("data set", "loading", dataset.bytes)
    started = time.monotonic()
    for index in range(dataset.records):
        value = values[index % len(values)]
        partition = index % dataset.partitions
        while True:
            try:
                producer.produce(dataset.topic, value, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if index % 10_000 == 0:
            producer.poll(0)
            progress.update(index * dataset.record_size)
            if errors:
                raise RuntimeError(f"loading {dataset.topic}: {errors[0]}")
    remaining = producer.flush(300)
    if remaining or errors:
        raise RuntimeError(
            f"loading {dataset.topic}: {remaining} records unacknowledged, errors {errors[:3]}"
        )
    seconds = time.monotonic() - started
    ends = end_offsets(admin, dataset.topic, dataset.partitions)
    expected = expected_end_offsets(dataset)
    if ends != expected:
        raise RuntimeError(f"{dataset.topic}: end offsets {ends}, expected {expected}")
    say(
        f"  data set: {dataset.records:,} records, {dataset.mib:,.0f} MB in {seconds:.1f} s "
        f"({dataset.mib / seconds:,.1f} MB/s)"
    )
    return seconds


def expected_end_offsets(dataset: Dataset) -> dict[int, int]:
    base, extra = divmod(dataset.records, dataset.partitions)
    return {p: base + (1 if p < extra else 0) for p in range(dataset.partitions)}
