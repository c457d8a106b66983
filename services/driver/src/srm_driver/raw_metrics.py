"""Raw replication metrics: every ``srm.metrics.interval.ms`` a driver writes what each
flow did here to ``srm-metrics-raw.internal`` on the flow's target (the records of
:mod:`srm_common.metrics.raw`; the aggregator folds them; ``docs/metrics.md``).

Two parts:

* :class:`MetricsSampler` (the runtime's thread, each pass): for each flow whose interval
  ended, the samples of that interval: a :class:`PartitionSample` per partition (the copy
  service's per-interval deltas, :mod:`srm_driver.copying.meter`), a :class:`FlowSample`
  and a :class:`GroupSample` per group of the checkpoint tasks here. It only reads memory
  and hands the batch over; it never waits.
* :class:`TargetWriter` (a thread per target cluster): creates the topic if missing and
  produces, the partition samples grouped (:func:`srm_common.metrics.grouping.grouped`:
  version 2 records of at most 128 KiB, each on the raw partition its members' own keys
  go to, carrying each topic's remote topic, sent every interval: a reader needs no
  history), so 10,000 partitions are a few records per interval. A batch it cannot
  take (the previous ones are still waiting for a target that does not answer) is
  dropped and counted, as are samples the producer gives up on: memory stays bounded,
  copying is never slowed, the driver never stops for metrics.

Every sample's id is ``<driver id>/<incarnation>/<sequence>`` (the incarnation is random
per process start), and a group takes its first member's, so a record the producer
delivers twice is counted once downstream.
A clean stop samples every flow one last time after the copy slots' final reports, so
every acknowledged copy is in some sample.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Producer
from srm_common.config.model import FlowConfig
from srm_common.metrics.grouping import grouped
from srm_common.metrics.raw import (
    RAW_TOPIC,
    FlowSample,
    GroupSample,
    PartitionSample,
    Sample,
    encode,
)

from srm_driver.copying.meter import PartitionMetrics

log = logging.getLogger(__name__)

# Partitions of the raw topic when a driver creates it: aggregator instances share the
# work by partitions.
RAW_TOPIC_PARTITIONS = 6
# Batches a target writer keeps while the target does not take them; more are dropped.
QUEUED_BATCHES = 8
# How often a writer reads the raw topic's partition count again (partitions added).
REREAD_S = 300.0
LOG_EVERY_S = 60.0


@dataclass(frozen=True)
class GroupMetrics:
    """One consumer group of a checkpoint task over one interval."""

    group: str
    checkpoints: int
    checkpoint_latency_ms: int | None
    untranslated_partitions: int


@dataclass(frozen=True)
class FlowView:
    """What a flow's tasks here show at the end of an interval (the sampler's input
    besides the copy service): source tasks by id with their partitions, whether its
    heartbeat runs here and when it last beat, its checkpoint tasks' groups."""

    source_tasks: Mapping[str, tuple[tuple[str, int], ...]]
    heartbeat: bool = False
    heartbeat_ms: int | None = None
    heartbeat_failing: bool = False
    checkpoint_tasks: int = 0
    groups: tuple[GroupMetrics, ...] = ()

    @property
    def idle(self) -> bool:
        return not (self.source_tasks or self.heartbeat or self.checkpoint_tasks)


class MetricsSampler:
    """Builds each flow's samples when its interval ends; see the module docstring."""

    def __init__(
        self,
        driver_id: str,
        *,
        partitions: Callable[[str, int], list[PartitionMetrics]],
        send: Callable[[FlowConfig, list[Sample]], None],
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        instance: str | None = None,
    ) -> None:
        self.driver_id = driver_id
        self.instance = instance or uuid.uuid4().hex[:8]
        self._partitions = partitions
        self._send = send
        self._clock_ms = clock_ms
        self._seq = itertools.count(1)
        self._last: dict[str, int] = {}  # flow -> end of its last interval (wall ms)
        self._started = clock_ms()

    def tick(self, flows: Mapping[str, FlowConfig], view: Callable[[str], FlowView]) -> int:
        """Sample each flow whose interval ended (``view`` is asked only for those: it
        drains what the flow's tasks counted); the number of samples handed over."""
        return self._sample(flows, view, final=False)

    def final(self, flows: Mapping[str, FlowConfig], view: Callable[[str], FlowView]) -> int:
        """Sample every flow now (a clean stop), whatever is left of its interval."""
        return self._sample(flows, view, final=True)

    def _sample(
        self, flows: Mapping[str, FlowConfig], view: Callable[[str], FlowView], *, final: bool
    ) -> int:
        now = self._clock_ms()
        handed = 0
        for name, flow in sorted(flows.items()):
            if not flow.metrics_enabled:
                continue
            since = self._last.get(name, self._started)
            if not final and now - since < flow.metrics_interval_ms:
                continue
            self._last[name] = now
            samples = self.samples(flow, view(name), self._partitions(name, now), now, since)
            if samples:
                self._send(flow, samples)
                handed += len(samples)
        return handed

    def samples(
        self,
        flow: FlowConfig,
        view: FlowView,
        partitions: Iterable[PartitionMetrics],
        now: int,
        since: int,
    ) -> list[Sample]:
        """One interval of ``flow`` (``since`` to ``now``, wall ms) as raw samples; none
        when nothing of the flow is here and nothing was counted."""
        partitions = list(partitions)
        if view.idle and not partitions:
            return []
        name, interval = flow.name, max(0, now - since)
        common = lambda: {"id": self._id(), "at_ms": now, "interval_ms": interval, "flow": name}  # noqa: E731
        out: list[Sample] = []
        for p in partitions:
            c = p.counters
            counted = c.latency.total > 0
            out.append(
                PartitionSample(
                    **common(),
                    topic=p.topic,
                    partition=p.partition,
                    remote_topic=p.remote,
                    records=c.records,
                    bytes=c.bytes,
                    latency=c.latency,
                    latency_sum_ms=c.latency_sum_ms,
                    latency_min_ms=c.latency_min_ms if counted else None,
                    latency_max_ms=c.latency_max_ms if counted else None,
                    lag_records=p.lag_records,
                    lag_ms=p.lag_ms,
                    lost=p.lost,
                    status=p.status,
                    halt_reason=p.halt_reason,
                )
            )
        out.append(
            FlowSample(
                **common(),
                driver=self.driver_id,
                tasks=_tasks_by_status(view, partitions),
                halted_partitions=sum(1 for p in partitions if p.status == "halted"),
                heartbeat_age_ms=(
                    max(0, now - view.heartbeat_ms)
                    if view.heartbeat and view.heartbeat_ms is not None
                    else None
                ),
            )
        )
        for g in view.groups:
            out.append(
                GroupSample(
                    **common(),
                    group=g.group,
                    checkpoint_latency_ms=g.checkpoint_latency_ms,
                    checkpoints=g.checkpoints,
                    untranslated_partitions=g.untranslated_partitions,
                )
            )
        return out

    def _id(self) -> str:
        return f"{self.driver_id}/{self.instance}/{next(self._seq)}"


def _tasks_by_status(view: FlowView, partitions: list[PartitionMetrics]) -> dict[str, int]:
    """Each task of the flow here by status: a source task is halted when one of its
    partitions is, pending while one waits (or its remote topic is not ready), else
    running; a heartbeat task failing while its last beat failed."""
    status = {(p.topic, p.partition): p.status for p in partitions}
    counts: dict[str, int] = {}

    def add(what: str) -> None:
        counts[what] = counts.get(what, 0) + 1

    for tps in view.source_tasks.values():
        seen = {status.get(tp, "pending") for tp in tps}
        add("halted" if "halted" in seen else "pending" if "pending" in seen else "running")
    if view.heartbeat:
        add("failing" if view.heartbeat_failing else "running")
    for _ in range(view.checkpoint_tasks):
        add("running")
    return counts


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


class RawMetrics:
    """The sampler and a :class:`TargetWriter` per target cluster (made on first use by
    ``writer``); what the runtime holds."""

    def __init__(
        self,
        driver_id: str,
        *,
        partitions: Callable[[str, int], list[PartitionMetrics]],
        writer: Callable[[FlowConfig], TargetWriter],
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._writer = writer
        self.writers: dict[str, TargetWriter] = {}
        self._final = False
        self.sampler = MetricsSampler(
            driver_id, partitions=partitions, send=self._send, clock_ms=clock_ms
        )

    def tick(self, flows: Mapping[str, FlowConfig], view: Callable[[str], FlowView]) -> None:
        self.sampler.tick(flows, view)

    def close(
        self,
        flows: Mapping[str, FlowConfig],
        view: Callable[[str], FlowView],
        timeout: float = 10.0,
    ) -> None:
        """The last samples (after the copy's final reports), written within ``timeout``."""
        deadline = time.monotonic() + timeout
        self._final = True
        try:
            self.sampler.final(flows, view)
        finally:
            for writer in self.writers.values():
                writer.close(max(0.0, deadline - time.monotonic()))

    def _send(self, flow: FlowConfig, samples: list[Sample]) -> None:
        writer = self.writers.get(flow.target)
        if writer is None:
            writer = self.writers[flow.target] = self._writer(flow)
            writer.start()
        writer.offer(samples, wait_s=2.0 if self._final else 0.0)
