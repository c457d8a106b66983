"""The raw metrics' writer to one target cluster (:class:`TargetWriter`, a thread per
target; the samples are :mod:`srm_driver.raw_metrics`'): creates
``srm-metrics-raw.internal`` if missing and produces, the partition samples grouped
(:func:`srm_common.metrics.grouping.grouped`: version 2 records of at most 128 KiB, each
on the raw partition its members' own keys go to). A batch it cannot take (the previous
:data:`QUEUED_BATCHES` are still waiting for a target that does not answer) is dropped
and counted, as are samples the producer gives up on: memory stays bounded, copying is
never slowed, the driver never stops for metrics. The composition root builds its
producer from :func:`producer_config`."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Producer
from srm_common.config.model import FlowConfig
from srm_common.metrics.grouping import grouped
from srm_common.metrics.raw import RAW_TOPIC, PartitionSample, Sample, encode

log = logging.getLogger(__name__)

# Partitions of the raw topic when a driver creates it: aggregator instances share the
# work by partitions.
RAW_TOPIC_PARTITIONS = 6
# Batches a target writer keeps while the target does not take them; more are dropped.
QUEUED_BATCHES = 8
# How often a writer reads the raw topic's partition count again (partitions added).
REREAD_S = 300.0
LOG_EVERY_S = 60.0


class TargetWriter(threading.Thread):
    """Writes batches of samples to :data:`RAW_TOPIC` on one cluster; never blocks the
    caller (see the module docstring)."""

    def __init__(
        self,
        cluster: str,
        *,
        producer: Producer,
        ensure_topic: Callable[[], object],
        raw_partitions: Callable[[], int] | None = None,
        flush_s: float = 5.0,
    ) -> None:
        super().__init__(name=f"raw metrics to {cluster}", daemon=True)
        self.cluster = cluster
        self.written = 0
        self.dropped = 0
        self._producer = producer
        self._ensure_topic = ensure_topic
        self._count_partitions = raw_partitions or self._partitions_of_topic
        self._raw_partitions = RAW_TOPIC_PARTITIONS
        self._partitions_read_at = 0.0
        self._topic_ready = False
        self._flush_s = flush_s
        self._batches: queue.Queue[list[Sample] | None] = queue.Queue(maxsize=QUEUED_BATCHES)
        self._lock = threading.Lock()
        self._last_log = 0.0
        self._reason = ""

    def _partitions_of_topic(self) -> int:
        """The raw topic's partition count, as the producer's metadata says."""
        topics = self._producer.list_topics(RAW_TOPIC, timeout=10).topics
        return len(topics[RAW_TOPIC].partitions)

    def offer(self, batch: list[Sample], *, wait_s: float = 0.0) -> bool:
        """Queue ``batch``; False (and counted as dropped) when the queue is full."""
        try:
            self._batches.put(batch, timeout=wait_s) if wait_s else self._batches.put_nowait(batch)
        except queue.Full:
            self._drop(len(batch), "the previous samples are still waiting for the cluster")
            return False
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued (at most ``timeout``), then stop."""
        deadline = time.monotonic() + timeout
        try:
            self._batches.put(None, timeout=timeout)
        except queue.Full:
            pass
        self.join(max(0.0, deadline - time.monotonic()))

    def run(self) -> None:
        while True:
            batch = self._batches.get()
            if batch is None:
                break
            self._write(batch)
        self._producer.flush(self._flush_s)
        self._report()

    def _write(self, batch: list[Sample]) -> None:
        if not self._topic_ready or time.monotonic() >= self._partitions_read_at + REREAD_S:
            try:
                self._ensure_topic()
                self._raw_partitions = max(1, self._count_partitions())
                self._partitions_read_at = time.monotonic()
                self._topic_ready = True
            except Exception as exc:  # noqa: BLE001 - metrics never stop the driver
                if not self._topic_ready:
                    self._drop(len(batch), f"cannot create {RAW_TOPIC}: {exc}")
                    return
        records = self._records(batch)
        for index, (partition, sample, count) in enumerate(records):
            try:
                self._producer.produce(
                    RAW_TOPIC,
                    key=sample.key(),
                    value=encode(sample),
                    on_delivery=lambda error, _message, n=count: self._delivered(error, n),
                    **({} if partition is None else {"partition": partition}),
                )
            except BufferError:
                self._drop(sum(c for _p, _s, c in records[index:]), "the producer's buffer is full")
                break
            except Exception as exc:  # noqa: BLE001 - metrics never stop the driver
                self._drop(sum(c for _p, _s, c in records[index:]), str(exc))
                break
        self._producer.flush(self._flush_s)

    def _records(self, batch: list[Sample]) -> list[tuple[int | None, Sample, int]]:
        """The records of ``batch``: its partition samples grouped (version 2, each group
        on the raw partition its members' keys go to), the others one each (keyed)."""
        parts = [s for s in batch if isinstance(s, PartitionSample)]
        records: list[tuple[int | None, Sample, int]] = [
            (None, s, 1) for s in batch if not isinstance(s, PartitionSample)
        ]
        for partition, group in grouped(parts, self._raw_partitions):
            records.append((partition, group, len(group.partitions)))
        return records

    def _delivered(self, error: KafkaError | None, samples: int) -> None:
        if error is None:
            with self._lock:
                self.written += samples
        else:
            self._drop(samples, str(error))

    def _drop(self, count: int, reason: str) -> None:
        with self._lock:
            self.dropped += count
            self._reason = reason
        now = time.monotonic()
        if now - self._last_log >= LOG_EVERY_S:
            self._last_log = now
            self._report()

    def _report(self) -> None:
        if self.dropped:
            log.warning(
                "raw metrics to %s: %d samples dropped so far (%d written); last reason: %s",
                self.cluster,
                self.dropped,
                self.written,
                self._reason,
            )


def producer_config(flow: FlowConfig) -> dict[str, Any]:
    """The keys of the producer of ``flow``'s target writer (the composition root builds
    the writer, :func:`srm_driver.bootstrap.target_writer`)."""
    return {
        **flow.target_internal_producer,
        "acks": "all",
        "linger.ms": 50,
        # A sample the target does not take within this is dropped (and counted).
        "message.timeout.ms": max(10_000, min(60_000, 3 * flow.metrics_interval_ms)),
        "queue.buffering.max.messages": 100_000,
        "queue.buffering.max.kbytes": 16_384,
    }
