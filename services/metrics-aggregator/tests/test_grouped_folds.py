"""Grouped raw samples (version 2, ``kind: partitions``) fold exactly as the version 1
samples they stand for: the same windows at every level, each group counted once when
read twice or again after a crash, and drivers of both versions at once (an upgrade)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from srm_common.metrics.grouping import grouped, raw_partition
from srm_common.metrics.raw import Histogram, PartitionSample, encode
from srm_metrics_aggregator.fold_settings import Settings

from .pipeline import Pipeline

T0 = 1_700_000_040_000
FLOW = "primary->backup"
RAW = 3  # raw partitions
GOLDEN = Path(__file__).parents[3] / "libs/srm_common/tests/golden/raw_metrics_v2.json"
SETTINGS = Settings(windows=(5_000, 60_000), grace_ms=2_000, update_ms=0)


def interval(seq: int, at_ms: int, rng: random.Random, partitions: int) -> list[PartitionSample]:
    """One interval of a driver: a sample per partition of 8 topics, most of them idle."""
    out = []
    for i in range(partitions):
        records = rng.choice((0, 0, 0, rng.randrange(1, 60)))
        latencies = [rng.randrange(1, 400) for _ in range(records)]
        out.append(
            PartitionSample(
                id=f"d1/i1/{seq * 1000 + i}",
                at_ms=at_ms,
                interval_ms=1_000,
                flow=FLOW,
                topic=f"t{i % 8}",
                partition=i // 8,
                remote_topic=f"primary.t{i % 8}",
                records=records,
                bytes=records * 11,
                latency=Histogram.of(latencies),
                latency_sum_ms=sum(latencies),
                latency_min_ms=min(latencies, default=None),
                latency_max_ms=max(latencies, default=None),
                lag_records=rng.randrange(100),
                lag_ms=rng.randrange(1000),
            )
        )
    return out


def workload(intervals: int, partitions: int, seed: int) -> list[list[PartitionSample]]:
    rng = random.Random(seed)
    return [
        interval(n, T0 + n * 1_000 + rng.randrange(200), rng, partitions) for n in range(intervals)
    ]


def as_v1(pipe: Pipeline, samples: list[PartitionSample]) -> None:
    for sample in samples:
        pipe.feed_sample(sample, partition=raw_partition(sample.key(), RAW))


def as_groups(pipe: Pipeline, samples: list[PartitionSample], *, twice: bool = False) -> int:
    groups = grouped(samples, RAW, max_bytes=2_000)
    for partition, group in groups:
        for _ in range(2 if twice else 1):
            pipe.feed(partition, encode(group), group.key())
    return len(groups)


def close_all(pipe: Pipeline) -> None:
    for p in range(RAW):
        tick = PartitionSample(f"tick/{p}", T0 + 400_000, 1, FLOW, topic="tick", partition=p)
        pipe.feed_sample(tick, partition=p)


def aggregates(pipe: Pipeline) -> dict[bytes, bytes]:
    return {k: v for k, v in pipe.latest.items() if not k.startswith(b"mapping|")}


def test_groups_fold_to_the_windows_their_members_would_have_made() -> None:
    data = workload(24, 24, seed=5)
    total = sum(s.records for batch in data for s in batch)
    singles, groups = Pipeline(settings=SETTINGS), Pipeline(settings=SETTINGS)
    records = 0
    for batch in data:
        as_v1(singles, batch)
        records += as_groups(groups, batch)
    close_all(singles)
    close_all(groups)
    assert groups.dead == singles.dead == []
    assert records < 24 * 24 / 4, "a few records per interval, not one per partition"
    assert aggregates(groups) == aggregates(singles)
    for level in ("partition", "topic", "flow", "cluster"):
        for size in SETTINGS.windows:
            closed = [w for w in groups.windows(level, closed=True) if w.window_ms == size]
            assert sum(w.figures.records for w in closed) == total, (level, size)
    mappings = {k for k in groups.latest if k.startswith(b"mapping|")}
    assert mappings == {f"mapping|{FLOW}|t{i}".encode() for i in range(8)}


def test_groups_read_twice_or_again_after_a_crash_count_once() -> None:
    data = workload(20, 16, seed=9)
    total = sum(s.records for batch in data for s in batch)
    reference = Pipeline(settings=SETTINGS)
    for batch in data:
        as_groups(reference, batch)
    close_all(reference)

    crashing = Pipeline(settings=SETTINGS)
    for batch in data[:14]:
        as_groups(crashing, batch, twice=True)  # a producer's retry delivers a group twice
    assert crashing.folder.counts["duplicate"] > 0
    # Killed: offsets committed up to what the first 12 intervals wrote; the rest of what
    # was folded is read again (its effects are in the state).
    committed = dict.fromkeys(range(RAW), 0)
    for batch in data[:8]:
        for partition, _group in grouped(batch, RAW, max_bytes=2_000):
            committed[partition] += 2
    crashing.restart(committed)
    crashing.resend(RAW)
    for batch in data[8:]:
        as_groups(crashing, batch, twice=True)
    close_all(crashing)
    assert crashing.folder.counts["replayed"] > 0
    assert crashing.dead == []
    for level in ("partition", "topic", "flow", "cluster"):
        for size in SETTINGS.windows:
            closed = [w for w in crashing.windows(level, closed=True) if w.window_ms == size]
            assert sum(w.figures.records for w in closed) == total, (level, size)
    assert aggregates(crashing) == aggregates(reference)


def test_drivers_of_both_versions_at_once_add_up() -> None:
    """An upgrade: the first intervals as version 1 samples, the rest as groups, and a
    second driver still on version 1 all along (its own partitions)."""
    data = workload(20, 16, seed=13)
    other = workload(20, 8, seed=14)
    for batch in other:
        for i, sample in enumerate(batch):
            batch[i] = PartitionSample(
                **{**sample.__dict__, "id": "d2" + sample.id[2:], "topic": "old"}
            )
    total = sum(s.records for batch in data + other for s in batch)
    pipe = Pipeline(settings=SETTINGS)
    for n, (batch, old) in enumerate(zip(data, other, strict=True)):
        (as_v1 if n < 10 else as_groups)(pipe, batch)
        as_v1(pipe, old)
    close_all(pipe)
    assert pipe.dead == []
    for level in ("partition", "topic", "flow", "cluster"):
        closed = [w for w in pipe.windows(level, closed=True) if w.window_ms == 60_000]
        assert sum(w.figures.records for w in closed) == total, level


def test_a_late_group_is_one_dead_letter_saying_how_many_partitions() -> None:
    pipe = Pipeline(settings=Settings(windows=(5_000,), grace_ms=1_000, update_ms=0))
    late = workload(1, 16, seed=1)[0]
    ahead = PartitionSample("d1/i1/ahead", T0 + 60_000, 1, FLOW, topic="t0", partition=0)
    for p in range(RAW):
        pipe.feed_sample(ahead, partition=p)
    as_groups(pipe, late)
    reasons = pipe.reasons()
    assert reasons and all(r.startswith("late: window ") for r in reasons)
    assert all("partitions)" in r for r in reasons), reasons
    assert len(reasons) == len(grouped(late, RAW, max_bytes=2_000))


def test_a_group_with_a_bad_member_is_refused_whole() -> None:
    pipe = Pipeline(settings=SETTINGS)
    group = grouped(workload(1, 4, seed=2)[0], 1)[0][1]
    data = json.loads(encode(group))
    data["topics"][0]["partitions"][0]["records"] = -5
    pipe.feed(0, json.dumps(data).encode())
    assert pipe.reasons() == [
        "partitions sample: t0-0: records, bytes, lost and latency_sum_ms must not be negative"
    ]
    assert pipe.windows("partition") == []


def test_golden_grouped_records_fold() -> None:
    pipe = Pipeline()
    for record in json.loads(GOLDEN.read_text())["records"]:
        pipe.feed(0, record["value"].encode())
    assert pipe.dead == []
    by_partition = {
        (w.subject["topic"], w.subject["partition"]): w.figures for w in pipe.windows("partition")
    }
    assert by_partition[("orders", 3)].records == 120
    assert by_partition[("orders", 4)].lag_records == 0
    assert by_partition[("payments", 0)].halt_reason.startswith("conflict")  # type: ignore[union-attr]
    assert by_partition[("payments", 0)].lost == 3
    flow = [w.figures for w in pipe.windows("flow")][0]
    assert (flow.records, flow.partitions, flow.halted_partitions) == (120, 4, 1)
    assert b"mapping|primary->backup|payments" in pipe.latest
