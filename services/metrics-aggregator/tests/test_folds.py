"""The aggregator's folds: sums, rates, quantiles, last figures, duplicates, late samples,
closing, restarts, and the released golden raw records."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from srm_common.errors import ConfigError
from srm_common.metrics.raw import (
    FlowSample,
    GroupSample,
    Histogram,
    PartitionSample,
    TopicMapping,
    encode,
)
from srm_metrics_aggregator.fold_settings import Settings
from srm_metrics_aggregator.windows import parse_windows, window_start

from .pipeline import Pipeline

T0 = 1_700_000_040_000  # a minute's start
FLOW = "primary->backup"
GOLDEN = Path(__file__).parents[3] / "libs/srm_common/tests/golden/raw_metrics_v1.json"


def part(
    seq: int,
    at_ms: int,
    *,
    partition: int = 0,
    topic: str = "orders",
    records: int = 10,
    latencies: tuple[int, ...] = (),
    lag: int | None = None,
    status: str = "running",
    flow: str = FLOW,
) -> PartitionSample:
    return PartitionSample(
        id=f"d1/i1/{seq}",
        at_ms=at_ms,
        interval_ms=10_000,
        flow=flow,
        topic=topic,
        partition=partition,
        remote_topic=f"primary.{topic}",
        records=records,
        bytes=records * 100,
        latency=Histogram.of(latencies),
        latency_sum_ms=sum(latencies),
        latency_min_ms=min(latencies, default=None),
        latency_max_ms=max(latencies, default=None),
        lag_records=lag,
        lag_ms=None if lag is None else lag * 10,
        status=status,
        halt_reason="conflict" if status == "halted" else None,
    )


def one(pipe: Pipeline, level: str, **subject: object):  # type: ignore[no-untyped-def]
    found = [w for w in pipe.windows(level) if all(w.subject[k] == v for k, v in subject.items())]
    assert len(found) == 1, found
    return found[0]


def test_window_sizes_and_starts() -> None:
    assert parse_windows("1h, 1m") == (60_000, 3_600_000)
    assert parse_windows("2s,500ms,2000") == (500, 2000)
    assert window_start(T0 + 59_999, 60_000) == T0
    assert window_start(T0 + 60_000, 60_000) == T0 + 60_000
    for bad in ("", "1x", "0s", "-1m"):
        with pytest.raises(ConfigError, match="srm.metrics.windows"):
            parse_windows(bad)


def test_sums_rates_and_quantiles_up_to_the_cluster() -> None:
    pipe = Pipeline()
    pipe.feed_sample(part(1, T0 + 10_000, partition=0, records=30, latencies=(3,) * 99 + (700,)))
    pipe.feed_sample(part(2, T0 + 20_000, partition=1, records=90, latencies=(40,)), partition=1)
    pipe.feed_sample(part(3, T0 + 20_000, topic="payments", records=6), partition=2)

    p0 = one(pipe, "partition", topic="orders", partition=0)
    assert (p0.figures.records, p0.figures.bytes) == (30, 3000)
    derived = p0.figures.derived(p0.window_ms)
    assert derived["records_per_s"] == 0.5 and derived["bytes_per_s"] == 50.0
    assert (derived["latency_p50_ms"], derived["latency_p99_ms"]) == (5, 5)
    assert (p0.figures.latency_min_ms, p0.figures.latency_max_ms) == (3, 700)
    assert derived["latency_avg_ms"] == pytest.approx((3 * 99 + 700) / 100)

    orders = one(pipe, "topic", topic="orders")
    assert orders.figures.records == 120 and orders.figures.partitions == 2
    assert orders.figures.latency.total == 101 and orders.figures.latency_max_ms == 700
    assert orders.figures.derived(60_000)["latency_p99_ms"] == 50
    flow = one(pipe, "flow", flow=FLOW)
    cluster = one(pipe, "cluster", cluster="backup")
    assert flow.figures.records == cluster.figures.records == 126
    assert flow.figures.derived(60_000)["records_per_s"] == 2.1
    assert not any(w.closed for w in pipe.windows("cluster"))


def test_last_lag_is_the_latest_sample_whatever_the_order() -> None:
    pipe = Pipeline()
    pipe.feed_sample(part(2, T0 + 20_000, lag=5))
    pipe.feed_sample(part(1, T0 + 10_000, lag=900))  # older, read later
    pipe.feed_sample(part(3, T0 + 15_000, partition=1, lag=7, status="halted"), partition=1)
    p0 = one(pipe, "partition", partition=0).figures
    assert (p0.lag_records, p0.lag_ms) == (5, 50)
    topic = one(pipe, "topic", topic="orders").figures
    assert (topic.lag_records, topic.lag_ms, topic.halted_partitions) == (12, 70, 1)
    assert one(pipe, "partition", partition=1).figures.halt_reason == "conflict"


def test_a_sample_read_twice_counts_once() -> None:
    pipe = Pipeline()
    sample = part(1, T0 + 1000, records=17)
    for _ in range(3):
        pipe.feed_sample(sample)
    pipe.feed_sample(part(2, T0 + 2000, records=1))
    assert one(pipe, "topic", topic="orders").figures.records == 18
    assert pipe.folder.counts["duplicate"] == 2
    assert pipe.dead == []


def test_windows_close_at_end_plus_grace_and_late_samples_are_dead_letters() -> None:
    pipe = Pipeline(settings=Settings(windows=(60_000,), grace_ms=10_000, update_ms=0))
    first = part(1, T0 + 1000, records=5)
    pipe.feed_sample(first)
    pipe.feed_sample(part(2, T0 + 69_999, records=1))  # next window; end + grace not reached
    assert [w.closed for w in pipe.windows("partition")] == [False, False]
    pipe.feed_sample(part(3, T0 + 70_000, records=1))  # watermark = end + grace
    closed = pipe.windows("partition", closed=True)
    assert [(w.start_ms, w.figures.records) for w in closed] == [(T0, 5)]
    assert [w.closed for w in pipe.windows("topic")] == [True, False]

    pipe.feed_sample(first)  # again, after the close: a duplicate, no dead letter
    pipe.feed_sample(part(4, T0 + 59_000, records=100))  # new, for the closed window: late
    assert pipe.windows("partition", closed=True)[0].figures.records == 5
    assert pipe.reasons() == [
        f"late: window {T0}+60000 ms (grace 10000 ms) closed at watermark {T0 + 70_000} ms"
    ]
    assert pipe.dead[0].value == encode(part(4, T0 + 59_000, records=100))


def test_a_sample_late_for_its_minute_still_counts_in_its_hour() -> None:
    pipe = Pipeline(settings=Settings(windows=(60_000, 3_600_000), grace_ms=5_000, update_ms=0))
    hour = window_start(T0, 3_600_000)
    pipe.feed_sample(part(1, T0 + 70_000, records=1))
    pipe.feed_sample(part(2, T0 + 10_000, records=4))  # its minute closed at T0 + 65 s
    hours = [w for w in pipe.windows("partition") if w.window_ms == 3_600_000]
    assert [(w.start_ms, w.figures.records) for w in hours] == [(hour, 5)]
    assert "late: window" in pipe.reasons()[0]


def test_ids_are_forgotten_one_window_after_the_close() -> None:
    settings = Settings(windows=(60_000,), grace_ms=10_000, update_ms=0, min_retention_ms=0)
    pipe = Pipeline(settings=settings)
    pipe.feed_sample(part(1, T0 + 1000))
    pipe.feed_sample(part(2, T0 + 130_000))  # past end + grace + one window
    assert not any(k.startswith(f"c|0|60000|{T0}|") for k in pipe.raw_state)
    assert pipe.windows("partition", closed=True)[0].figures.records == 10  # still shown
    pipe.feed_sample(part(1, T0 + 1000))
    assert pipe.reasons() == [
        f"late: window {T0}+60000 ms (grace 10000 ms) closed at watermark {T0 + 130_000} ms"
    ]


def test_garbage_goes_to_the_dead_letter_topic_with_its_reason() -> None:
    pipe = Pipeline()
    pipe.feed(0, b"\x00garbage", key=b"k")
    pipe.feed(0, json.dumps({"v": 3, "kind": "partition"}).encode())
    bad_tasks = json.loads(encode(FlowSample(id="x", at_ms=T0, interval_ms=1, flow=FLOW)))
    bad_tasks["tasks"] = {"running": "two"}
    pipe.feed(0, json.dumps(bad_tasks).encode())
    pipe.feed_sample(part(1, T0 + 86_400_000 * 400))  # a driver clock a year ahead
    reasons = pipe.reasons()
    assert reasons[0].startswith("not JSON")
    assert reasons[1] == "version 3: this release reads versions 1 and 2"
    assert reasons[2] == "flow sample: tasks must map statuses to whole numbers"
    assert "ahead of the aggregator's clock" in reasons[3]
    assert pipe.dead[0].key == b"k" and pipe.dead[0].value == b"\x00garbage"
    assert pipe.windows("partition") == []


def test_groups_and_flows() -> None:
    pipe = Pipeline()
    for seq, (latency, untranslated) in enumerate([(30, 2), (10, 1), (None, 0)]):
        pipe.feed_sample(
            GroupSample(
                id=f"g{seq}",
                at_ms=T0 + 1000 * seq,
                interval_ms=1000,
                flow=FLOW,
                group="billing|eu",
                checkpoint_latency_ms=latency,
                checkpoints=2,
                untranslated_partitions=untranslated,
            )
        )
    for driver, tasks in (("d1", {"running": 2}), ("d2", {"running": 1, "halted": 1})):
        pipe.feed_sample(
            FlowSample(
                id=f"{driver}/1",
                at_ms=T0 + 5000,
                interval_ms=1000,
                flow=FLOW,
                driver=driver,
                tasks=tasks,
                heartbeat_age_ms=300 if driver == "d1" else 900,
            )
        )
    group = one(pipe, "group", group="billing|eu").figures
    assert (group.checkpoint_latency_min_ms, group.checkpoint_latency_max_ms) == (10, 30)
    assert group.derived(60_000)["checkpoint_latency_avg_ms"] == 20
    assert (group.checkpoints, group.untranslated_partitions) == (6, 0)
    flow = one(pipe, "flow", flow=FLOW).figures
    assert flow.tasks == {"halted": 1, "running": 3}
    assert (flow.drivers, flow.groups, flow.heartbeat_age_ms) == (2, 1, 900)


def test_topic_mappings_are_forwarded() -> None:
    pipe = Pipeline()
    mapping = TopicMapping(
        id="m1", at_ms=T0, interval_ms=0, flow=FLOW, topic="orders", remote_topic="orders"
    )
    pipe.feed_sample(mapping)
    assert pipe.latest[b"mapping|primary->backup|orders"] == encode(mapping)


def test_golden_raw_records_fold() -> None:
    pipe = Pipeline()
    for record in json.loads(GOLDEN.read_text())["records"]:
        pipe.feed(0, record["value"].encode())
    assert pipe.dead == []
    orders = one(pipe, "partition", topic="orders").figures
    assert (orders.records, orders.bytes, orders.lag_records) == (120, 122880, 12)
    assert orders.derived(60_000)["latency_p99_ms"] == 500
    payments = one(pipe, "partition", topic="payments").figures
    assert payments.halt_reason == "conflict: another writer at remote offset 7"
    flow = one(pipe, "flow", flow=FLOW).figures
    assert (flow.records, flow.halted_partitions, flow.tasks) == (
        120,
        1,
        {"halted": 1, "running": 2},
    )
    assert one(pipe, "group", group="billing").figures.checkpoint_latency_max_ms == 35
    assert b"mapping|primary->backup|orders" in pipe.latest


def _workload(n_samples: int, seed: int) -> tuple[list[tuple[int, PartitionSample]], int]:
    rng = random.Random(seed)
    samples = []
    for seq in range(n_samples):
        partition = rng.randrange(6)
        sample = part(
            seq,
            T0 + seq * 700 + rng.randrange(400),
            partition=partition,
            topic=rng.choice(("orders", "payments")),
            records=rng.randrange(1, 50),
            latencies=tuple(rng.randrange(1, 300) for _ in range(3)),
        )
        samples.append((partition % 3, sample))
    return samples, sum(s.records for _p, s in samples)


def _closed_sum(pipe: Pipeline, level: str, size: int = 5_000) -> int:
    return sum(w.figures.records for w in pipe.windows(level, closed=True) if w.window_ms == size)


def test_replays_and_restarts_count_each_sample_once() -> None:
    """At least once delivery as Faust gives it: after a crash the state holds the effect
    of some records its committed offset does not cover; they are read again."""
    samples, total = _workload(300, seed=7)
    settings = Settings(windows=(5_000, 60_000), grace_ms=2_000, update_ms=0)
    end = [(p, part(10_000 + p, T0 + 400_000, partition=p, records=0)) for p in range(3)]
    once = Pipeline(settings=settings)
    for p, sample in [*samples, *end]:
        once.feed_sample(sample, partition=p)

    crashing = Pipeline(settings=settings)
    for index, (p, sample) in enumerate(samples[:200]):
        crashing.feed_sample(sample, partition=p, lose=index >= 180)  # sends not flushed
    # Offsets committed up to the 150th sample: the next 50 are read again. Their
    # effects are all in the state (replays) or some of them (duplicates by id).
    committed = {p: sum(1 for q, _s in samples[:150] if q == p) for p in range(3)}
    crashing.restart(committed)
    crashing.resend()
    for p, sample in [*samples[150:], *end]:
        crashing.feed_sample(sample, partition=p)
    assert crashing.folder.counts["replayed"] == 50

    forgetful = Pipeline(settings=settings)  # the offset marker lost, the cells kept
    for p, sample in samples[:200]:
        forgetful.feed_sample(sample, partition=p)
    for key in [k for k in forgetful.raw_state if k.startswith("o|")]:
        del forgetful.raw_state[key]
    forgetful.restart(committed)
    forgetful.resend()
    for p, sample in [*samples[150:], *end]:
        forgetful.feed_sample(sample, partition=p)
    assert forgetful.folder.counts["duplicate"] > 0

    for pipe in (once, crashing, forgetful):
        for level in ("partition", "topic", "flow", "cluster"):
            for size in settings.windows:
                assert _closed_sum(pipe, level, size) == total, (level, size)
    assert crashing.dead == []
    assert once.latest == crashing.latest


def test_a_partition_behind_the_others_still_adds_up() -> None:
    """One raw partition is read late (its instance was down): the windows above it were
    written closed without it, and are written again with it."""
    samples, total = _workload(120, seed=3)
    pipe = Pipeline(settings=Settings(windows=(5_000,), grace_ms=1_000, update_ms=0))
    end = [(p, part(10_000 + p, T0 + 400_000, partition=p, records=0)) for p in range(3)]
    order = [x for x in samples if x[0] != 2] + end[:2] + [x for x in samples if x[0] == 2]
    for p, sample in [*order, end[2]]:
        pipe.feed_sample(sample, partition=p)
    assert _closed_sum(pipe, "cluster") == total
    assert all(w.closed for w in pipe.windows("cluster") if w.start_ms < T0 + 400_000)


def test_open_updates_wait_for_the_update_interval() -> None:
    pipe = Pipeline(settings=Settings(windows=(60_000,), update_ms=5_000))
    pipe.feed_sample(part(1, T0 + 1000, records=1))
    pipe.feed_sample(part(2, T0 + 2000, records=2))
    assert one(pipe, "partition", partition=0).figures.records == 1
    pipe.flush()
    assert one(pipe, "partition", partition=0).figures.records == 1
    pipe.clock.now += 5
    pipe.flush()
    assert one(pipe, "partition", partition=0).figures.records == 3
    assert one(pipe, "cluster", cluster="backup").figures.records == 3


def test_the_next_offset_to_fold_is_kept_with_the_state() -> None:
    """What tells the service that Faust skipped records in a rebalance (and acknowledged
    them): a record past this offset."""
    pipe = Pipeline()
    assert pipe.folder.next_offset(0) is None
    pipe.feed_sample(part(1, T0 + 1000))
    pipe.feed(0, b"garbage")
    pipe.restart()
    assert pipe.folder.next_offset(0) == 2
    assert pipe.merger.next_offset(0) is not None or pipe.merger.next_offset(1) is not None
