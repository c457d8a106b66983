"""Raw replication metrics: every ``srm.metrics.interval.ms`` a driver writes what each
flow did here to ``srm-metrics-raw.internal`` on the flow's target (the records of
:mod:`srm_common.metrics.raw`; the aggregator folds them; ``docs/metrics.md``).

Two parts:

* :class:`MetricsSampler` (the runtime's thread, each pass): for each flow whose interval
  ended, the samples of that interval: a :class:`PartitionSample` per partition (the copy
  service's per-interval deltas, :mod:`srm_driver.copying.meter`), a :class:`FlowSample`
  and a :class:`GroupSample` per group of the checkpoint tasks here. It only reads memory
  and hands the batch over; it never waits.
* :class:`~srm_driver.raw_metrics_writer.TargetWriter` (a thread per target cluster,
  :mod:`srm_driver.raw_metrics_writer`): creates the topic if missing and produces,
  the partition samples grouped (:func:`srm_common.metrics.grouping.grouped`: version 2
  records of at most 128 KiB, each on the raw partition its members' own keys
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
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from srm_common.config.model import FlowConfig
from srm_common.metrics.raw import (
    FlowSample,
    GroupSample,
    PartitionSample,
    Sample,
)

from srm_driver.copying.meter import PartitionMetrics
from srm_driver.raw_metrics_writer import TargetWriter

log = logging.getLogger(__name__)


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
