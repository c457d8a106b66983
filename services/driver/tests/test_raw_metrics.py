"""The raw metrics sampler and target writer with fakes: intervals, ids, what each
sample says, and a target that does not answer (dropped, counted, never blocking)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from srm_common.config import load_config
from srm_common.config.model import FlowConfig
from srm_common.metrics.grouping import raw_partition
from srm_common.metrics.raw import (
    FlowSample,
    GroupSample,
    Histogram,
    PartitionSample,
    PartitionsSample,
    Sample,
    TopicMapping,
    decode,
    encode,
)
from srm_driver.copying.meter import PartitionMetrics
from srm_driver.copying.state import Counters
from srm_driver.raw_metrics import FlowView, GroupMetrics, MetricsSampler
from srm_driver.raw_metrics_writer import QUEUED_BATCHES, TargetWriter

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:8"}
flows:
  primary->backup: {enabled: true, srm.metrics.interval.ms: 2000}
  backup->primary: {enabled: true, srm.metrics.enabled: false}
"""


@pytest.fixture
def flows(tmp_path: Path) -> dict[str, FlowConfig]:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    config = load_config(path)
    return {flow.name: flow for flow in config.flows.values()}


def metrics(partition: int, records: int, *, status: str = "running") -> PartitionMetrics:
    latencies = [3] * records
    return PartitionMetrics(
        topic="orders",
        partition=partition,
        remote="primary.orders",
        counters=Counters(
            records=records,
            bytes=10 * records,
            latency_sum_ms=3 * records,
            latency_max_ms=3 if records else 0,
            latency=Histogram.of(latencies),
            latency_min_ms=3 if records else None,
        ),
        lost=0,
        status=status,
        halt_reason="conflict: ..." if status == "halted" else None,
        lag_records=0,
        lag_ms=0,
    )


class Harness:
    def __init__(self) -> None:
        self.now = 1_000_000
        self.sent: list[tuple[str, list[Sample]]] = []
        self.counted = {0: 5, 1: 0}
        self.sampler = MetricsSampler(
            "d1",
            partitions=self.partitions,
            send=lambda flow, samples: self.sent.append((flow.name, samples)),
            clock_ms=lambda: self.now,
            instance="abc",
        )

    def partitions(self, flow: str, now_ms: int) -> list[PartitionMetrics]:
        if flow != "primary->backup":
            return []
        out = [
            metrics(p, n, status="halted" if p == 1 else "running") for p, n in self.counted.items()
        ]
        self.counted = dict.fromkeys(self.counted, 0)
        return out


def view(_name: str) -> FlowView:
    return FlowView(
        {"primary->backup-0": (("orders", 0),), "primary->backup-1": (("orders", 1),)},
        heartbeat=True,
        heartbeat_ms=1_000_000 + 1500,
        checkpoint_tasks=1,
        groups=(GroupMetrics("billing", 2, 40, 1),),
    )


def test_a_flow_is_sampled_when_its_interval_ended_and_not_before(flows) -> None:  # type: ignore[no-untyped-def]
    h = Harness()
    h.now += 1999
    assert h.sampler.tick(flows, view) == 0
    h.now += 1
    assert h.sampler.tick(flows, view) > 0
    assert [name for name, _ in h.sent] == ["primary->backup"], "the other flow has metrics off"
    assert h.sampler.tick(flows, view) == 0


def test_each_sample_says_what_the_interval_did_with_a_unique_id(flows) -> None:  # type: ignore[no-untyped-def]
    h = Harness()
    h.now += 2500
    h.sampler.tick(flows, view)
    (_flow, samples) = h.sent[0]
    assert all(s.at_ms == h.now and s.interval_ms == 2500 for s in samples)
    assert [s.id for s in samples] == [f"d1/abc/{i}" for i in range(1, len(samples) + 1)]
    by_kind: dict[type, list[Sample]] = {}
    for s in samples:
        by_kind.setdefault(type(s), []).append(s)
        assert decode(encode(s)) == s
    p0, p1 = by_kind[PartitionSample]
    assert (p0.records, p0.bytes, p0.latency.total, p0.latency_min_ms, p0.latency_max_ms) == (
        5,
        50,
        5,
        3,
        3,
    )
    assert (p1.records, p1.latency_max_ms, p1.status, p1.halt_reason) == (
        0,
        None,
        "halted",
        "conflict: ...",
    )
    (flow,) = by_kind[FlowSample]
    assert flow.tasks == {
        "running": 3,
        "halted": 1,
    }  # 2 source (one halted), heartbeat, checkpoints
    assert (flow.halted_partitions, flow.heartbeat_age_ms, flow.driver) == (1, 1000, "d1")
    (group,) = by_kind[GroupSample]
    assert (
        group.group,
        group.checkpoints,
        group.checkpoint_latency_ms,
        group.untranslated_partitions,
    ) == (
        "billing",
        2,
        40,
        1,
    )
    assert TopicMapping not in by_kind, "the writer's groups carry the remote topics"
    h.now += 2000
    h.sampler.tick(flows, view)
    ids = [s.id for _, batch in h.sent for s in batch]
    assert len(ids) == len(set(ids))
    assert h.sent[1][1][0].interval_ms == 2000


def test_a_clean_stop_samples_every_flow_at_once(flows) -> None:  # type: ignore[no-untyped-def]
    h = Harness()
    h.now += 300
    assert h.sampler.final(flows, view) > 0
    parts = [s for s in h.sent[0][1] if isinstance(s, PartitionSample)]
    assert sum(s.records for s in parts) == 5 and parts[0].interval_ms == 300


def test_a_flow_with_nothing_here_writes_nothing(flows) -> None:  # type: ignore[no-untyped-def]
    h = Harness()
    h.counted = {}
    h.now += 5000
    assert h.sampler.tick(flows, lambda _name: FlowView({})) == 0


class FakeProducer:
    """Takes records until ``full``; ``flush`` waits while ``hung`` (a dead target)."""

    def __init__(self) -> None:
        self.produced: list[tuple[bytes, bytes]] = []
        self.partitions: list[int | None] = []
        self.hung = threading.Event()
        self.full = False
        self._callbacks: list[object] = []

    def produce(self, topic, key, value, on_delivery, partition=None) -> None:  # type: ignore[no-untyped-def]
        if self.full:
            raise BufferError("queue full")
        self.produced.append((key, value))
        self.partitions.append(partition)
        self._callbacks.append(on_delivery)

    def list_topics(self, topic: str, timeout: float):  # type: ignore[no-untyped-def]
        described = SimpleNamespace(partitions=dict.fromkeys(range(6)))
        return SimpleNamespace(topics={topic: described})

    def flush(self, timeout: float) -> int:
        if self.hung.is_set():
            time.sleep(min(timeout, 0.3))
            return len(self._callbacks)
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(None, None)  # type: ignore[operator]
        return 0


def sample(i: int) -> Sample:
    return TopicMapping(
        id=f"d/x/{i}", at_ms=1, interval_ms=1, flow="a->b", topic="t", remote_topic="a.t"
    )


def test_a_target_that_does_not_answer_drops_batches_without_blocking() -> None:
    producer = FakeProducer()
    producer.hung.set()
    writer = TargetWriter("backup", producer=producer, ensure_topic=lambda: None, flush_s=0.3)  # type: ignore[arg-type]
    writer.start()
    started = time.monotonic()
    offered = [writer.offer([sample(i)]) for i in range(QUEUED_BATCHES + 5)]
    assert time.monotonic() - started < 0.1, "offering never waits"
    assert not all(offered) and writer.dropped >= 4
    producer.hung.clear()
    writer.close(5)
    assert not writer.is_alive()
    assert writer.written + writer.dropped >= QUEUED_BATCHES + 5 - 1


def test_a_topic_that_cannot_be_created_drops_the_batch_and_is_tried_again() -> None:
    producer = FakeProducer()
    tries = []

    def ensure() -> None:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("target down")

    writer = TargetWriter("backup", producer=producer, ensure_topic=ensure)  # type: ignore[arg-type]
    writer.start()
    writer.offer([sample(1), sample(2)])
    time.sleep(0.2)
    writer.offer([sample(3)])
    writer.close(5)
    assert (writer.dropped, writer.written, len(tries)) == (2, 1, 2)
    assert [decode(v).id for _k, v in producer.produced] == ["d/x/3"]


def test_a_full_producer_buffer_drops_the_rest_of_the_batch() -> None:
    producer = FakeProducer()
    producer.full = True
    writer = TargetWriter("backup", producer=producer, ensure_topic=lambda: None)  # type: ignore[arg-type]
    writer.start()
    writer.offer([sample(1), sample(2), sample(3)])
    writer.close(5)
    assert (writer.dropped, writer.written) == (3, 0)


def test_partition_samples_are_written_grouped_where_their_own_keys_go() -> None:
    producer = FakeProducer()
    writer = TargetWriter("backup", producer=producer, ensure_topic=lambda: None)  # type: ignore[arg-type]
    writer.start()
    parts = [
        PartitionSample(f"d1/x/{i}", 5, 5, "a->b", topic=f"t{i % 50}", partition=i // 50)
        for i in range(3000)
    ]
    flow = FlowSample(id="d1/x/9999", at_ms=5, interval_ms=5, flow="a->b", driver="d1")
    writer.offer([*parts, flow])
    writer.close(5)
    assert (writer.written, writer.dropped) == (3001, 0), "counted in samples"
    records = [decode(v) for _k, v in producer.produced]
    groups = [r for r in records if isinstance(r, PartitionsSample)]
    assert len(records) <= 13 and [r for r in records if isinstance(r, FlowSample)] == [flow]
    members = [(m.topic, m.partition) for g in groups for m in g.partitions]
    assert sorted(members) == sorted((p.topic, p.partition) for p in parts)
    for (key, _value), partition, record in zip(
        producer.produced, producer.partitions, records, strict=True
    ):
        if isinstance(record, PartitionsSample):
            assert key == record.key()
            assert {raw_partition(m.key(), 6) for m in record.partitions} == {partition}
        else:
            assert partition is None, "keyed: the producer's partitioner places it"
