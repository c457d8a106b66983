"""Steady latency at scale: a slow stream spread over every partition of the data set.

After a replicator of ``make bench-scale`` has caught up (and copied the new topic), records
are produced at ``rate`` records/s for ``seconds``, record ``n`` to partition ``n mod P`` of
the data set's P partitions (at 500 records/s over 10,000 partitions, one record a partition
every 20 s): every partition stays alive and none is busy, which is what a replicator's
per-partition work costs most under. Each record carries its sequence number and send
time (the same value layout as :mod:`srm_bench.latency`); a consumer on the target, assigned
every remote partition at the end offsets read just before, takes ``receive time - send
time``. Records sent during ``warmup`` are left out of the percentiles; the 5 s windows keep
the whole phase.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Producer, TopicPartition

from srm_bench.latency import LatencyResult, Receiver, collect, percentile
from srm_bench.progress import say
from srm_bench.replicators import remote_topic
from srm_bench.scale_data import ScaleDataset, end_offsets
from srm_bench.stack import admin_client

_VALUE = struct.Struct(">QQ")  # sequence number, send time in µs (as srm_bench.latency)
ACK_SECONDS = 120.0
# With linger.ms=0 a stream spread over 10,000 partitions goes one record a request, five
# requests in flight: the source acknowledged after 43 s (p50) at 500 records/s, so the
# figure measured the bench's producer. 5 ms lets a request carry the records of many
# partitions (acks p50 26 ms, p99 0.46 s on the same broker with 20 ms) and costs every
# replicator the same few milliseconds.
SOURCE_LINGER_MS = 5


def spread(dataset: ScaleDataset) -> Callable[[int], tuple[str, int]]:
    """Where record ``n`` goes: partition ``n mod P`` of the data set, topic by topic."""
    topics = dataset.topic_names()
    per_topic = dataset.partitions

    def destination(n: int) -> tuple[str, int]:
        index = n % (len(topics) * per_topic)
        return topics[index // per_topic], index % per_topic

    return destination


@dataclass(frozen=True)
class SpreadLatency:
    """The end-to-end figures; how long the source took to acknowledge the records (a
    part of every end-to-end latency that no replicator controls); and the replicator's
    own share, per record from the source's acknowledgement to the arrival on the target
    (the records after the warm-up that arrived)."""

    copy: LatencyResult
    source_ack_p50_ms: float
    source_ack_p99_ms: float
    after_ack_p50_ms: float = math.nan
    after_ack_p99_ms: float = math.nan
    source_unacknowledged: int = 0

    def describe(self) -> dict[str, object]:
        acks = {
            "source_ack_p50_ms": self.source_ack_p50_ms,
            "source_ack_p99_ms": self.source_ack_p99_ms,
            "after_ack_p50_ms": self.after_ack_p50_ms,
            "after_ack_p99_ms": self.after_ack_p99_ms,
            "source_unacknowledged": self.source_unacknowledged,
        }
        return {**self.copy.describe(), **{k: round(v, 2) for k, v in acks.items()}}


def measure_spread_latency(
    label: str,
    source: str,
    target: str,
    dataset: ScaleDataset,
    *,
    rate: int,
    seconds: float,
    warmup: float,
) -> SpreadLatency:
    destination = spread(dataset)
    partitions = [(remote_topic(t), p) for t, p in dataset.source_partitions()]
    ends = end_offsets(admin_client(target), partitions)
    receiver = Receiver(target, [TopicPartition(t, p, ends[(t, p)]) for t, p in partitions])
    receiver.start()
    say(
        f"  {label}: steady latency: {rate} records/s over {len(partitions):,} partitions"
        f" for {seconds:.0f} s ({warmup:.0f} s warm-up)"
    )
    acked_ms: dict[int, float] = {}  # sequence number -> ms from send to acknowledgement

    def acknowledged(error: object, message: object) -> None:
        if error is None:
            sequence, sent_us = _VALUE.unpack_from(message.value())  # type: ignore[attr-defined]
            acked_ms[sequence] = time.time() * 1000 - sent_us / 1000

    producer = Producer(
        {
            "bootstrap.servers": source,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": SOURCE_LINGER_MS,
            "log_level": 2,
        }
    )
    padding = bytes(max(0, dataset.record_size - _VALUE.size))
    started = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - started) < seconds:
        while sent < int(elapsed * rate):
            topic, partition = destination(sent)
            now_us = time.time_ns() // 1000
            producer.produce(topic, _VALUE.pack(sent, now_us) + padding, partition=partition,
                             timestamp=now_us // 1000, on_delivery=acknowledged)  # fmt: skip
            sent += 1
        producer.poll(0)
        time.sleep(0.002)
    send_seconds = time.monotonic() - started
    unacknowledged = producer.flush(ACK_SECONDS)
    if unacknowledged:
        # The source's own slowness (docs/benchmark.md, "Scale"): the figures go on with
        # what it acknowledged; the replicator's share is per acknowledged record.
        say(f"  {label}: {unacknowledged:,} records unacknowledged by the source after"
            f" {ACK_SECONDS:.0f} s; measuring the acknowledged ones")  # fmt: skip
    result = collect(receiver, sent=sent, send_seconds=send_seconds, rate=rate, warmup=warmup)
    acks = sorted(acked_ms.values())
    shares = after_acknowledgement(receiver.latency_ms, acked_ms, first=int(warmup * rate))
    say(
        f"  {label}: steady latency p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms"
        f" ({result.measured:,} records, {result.lost} missing; the source acknowledged"
        f" p99 {percentile(acks, 99):.1f} ms; from its acknowledgement to the target p50"
        f" {percentile(shares, 50):.1f} ms, p99 {percentile(shares, 99):.1f} ms)"
    )
    return SpreadLatency(
        result,
        percentile(acks, 50),
        percentile(acks, 99),
        percentile(shares, 50),
        percentile(shares, 99),
        unacknowledged,
    )


def after_acknowledgement(
    latency_ms: dict[int, float], acked_ms: dict[int, float], *, first: int
) -> list[float]:
    """Per record from ``first`` on that was both acknowledged and received: the time from
    the source's acknowledgement to the arrival (end-to-end less the acknowledgement; a
    record can arrive before its acknowledgement returns, hence no floor), sorted."""
    return sorted(
        latency - acked_ms[sequence]
        for sequence, latency in latency_ms.items()
        if sequence >= first and sequence in acked_ms
    )
