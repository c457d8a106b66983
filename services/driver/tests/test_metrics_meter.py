"""Per-interval deltas from the copy's cumulative counters: extremes bounded by the
histogram, plans that start again at zero, partitions released before a sample."""

from __future__ import annotations

from srm_common.metrics.raw import LATENCY_BOUNDS_MS, Histogram
from srm_driver.copying.meter import Meter
from srm_driver.copying.protocol import parse_report
from srm_driver.copying.state import Counters, PartitionState

FLOW = "primary->backup"


def cumulative(*latencies: int) -> Counters:
    """What a plan reports after acknowledging one copy of each latency."""
    return Counters(
        records=len(latencies),
        bytes=10 * len(latencies),
        latency_sum_ms=sum(latencies),
        latency_max_ms=max(latencies, default=0),
        latency=Histogram.of(latencies),
        latency_min_ms=min(latencies, default=None),
    )


def test_the_first_report_of_a_plan_is_its_own_interval_exactly() -> None:
    delta = cumulative(3, 40, 700).since(Counters())
    assert (delta.records, delta.bytes, delta.latency_sum_ms) == (3, 30, 743)
    assert (delta.latency_min_ms, delta.latency_max_ms) == (3, 700)
    assert delta.latency == Histogram.of([3, 40, 700])


def test_extremes_that_moved_are_exact_and_the_others_bounded_by_the_buckets() -> None:
    before = cumulative(3, 900)
    moved = cumulative(3, 900, 1, 4000).since(before)
    assert (moved.latency_min_ms, moved.latency_max_ms) == (1, 4000)
    still = cumulative(3, 900, 30, 40).since(before)
    # The interval held 30 and 40 (bucket (20, 50]): max at most 50, min at least 21.
    assert (still.latency_min_ms, still.latency_max_ms) == (21, 50)
    assert still.latency.total == still.records == 2
    assert still.latency_sum_ms == 70


def test_bounds_never_pass_the_plan_extremes() -> None:
    before = cumulative(12, 15)
    delta = cumulative(12, 15, 13).since(before)  # bucket (10, 20] but the plan is 12..15
    assert (delta.latency_min_ms, delta.latency_max_ms) == (12, 15)


def test_counters_below_the_last_seen_start_again_at_zero() -> None:
    delta = cumulative(5).since(cumulative(5, 6, 7))
    assert (delta.records, delta.latency.total, delta.latency_max_ms) == (1, 1, 5)


def test_a_slot_of_an_older_version_reports_no_histogram_and_no_ends() -> None:
    body = {
        "job": "j",
        "slot": 0,
        "seq": 1,
        "units": [
            {
                "flow": FLOW,
                "epoch": 0,
                "partitions": [
                    {
                        "topic": "t",
                        "partition": 0,
                        "plan": 1,
                        "state": "sending",
                        "acked_up": 5,
                        "acked_down": 5,
                        "outstanding": 0,
                        "records": 5,
                        "bytes": 50,
                        "dropped": 0,
                        "latency_sum_ms": 9,
                        "latency_max_ms": 4,
                        "syncs": [],
                    }
                ],
            }
        ],
    }
    (part,) = parse_report(body).units[0].partitions
    assert (part.source_end, part.pending_ts, part.latency_min_ms) == (-1, -1, -1)
    counters = Counters.of(part)
    assert (counters.records, counters.latency.total, counters.latency_min_ms) == (5, 0, None)
    assert counters.since(Counters()).latency_max_ms == 4
    body["units"][0]["partitions"][0] |= {
        "latency_hist": [1, 0, 4] + [0] * (len(LATENCY_BOUNDS_MS) - 2),
        "latency_min_ms": 1,
        "source_end": 90,
        "pending_ts": 1_700_000_000_000,
    }
    (part,) = parse_report(body).units[0].partitions
    counters = Counters.of(part)
    assert counters.latency.counts[:3] == (1, 0, 4) and counters.latency_min_ms == 1
    assert (part.source_end, part.pending_ts) == (90, 1_700_000_000_000)


def state(key: tuple[str, int] = ("t", 0), **more: object) -> PartitionState:
    s = PartitionState(FLOW, key, "primary.t", 0)
    for name, value in more.items():
        setattr(s, name, value)
    return s


def test_a_drain_gives_each_interval_once_and_starts_the_next_at_zero() -> None:
    meter, s = Meter(), state(status="running")
    meter.count(s, cumulative(1, 2).since(Counters()))
    meter.count(s, cumulative(1, 2, 3).since(cumulative(1, 2)))
    (first,) = meter.drain(FLOW, [s], 0)
    assert (first.counters.records, first.counters.latency.total, first.status) == (3, 3, "running")
    (second,) = meter.drain(FLOW, [s], 0)
    assert second.counters.records == 0 and second.counters.latency_min_ms is None


def test_a_released_partition_keeps_its_interval_until_drained_then_is_gone() -> None:
    meter, s = Meter(), state()
    meter.count(s, cumulative(7).since(Counters()))
    meter.lost(s, 4)
    (gone,) = meter.drain(FLOW, [], 0)  # no longer held here
    assert (gone.counters.records, gone.lost, gone.status, gone.remote) == (
        1,
        4,
        "stopped",
        "primary.t",
    )
    assert meter.drain(FLOW, [], 0) == []


def test_lag_is_known_while_copying_from_the_slot_report() -> None:
    meter = Meter()
    caught_up = state(("t", 0), status="running", acked=(90, 90), source_end=90)
    behind = state(("t", 1), status="running", acked=(50, 50), source_end=90, pending_ts=1000)
    unseen = state(("t", 2), status="running", acked=(50, 50), source_end=90)
    halted = state(("t", 3), status="halted", source_end=90)
    lags = {
        m.partition: (m.lag_records, m.lag_ms)
        for m in meter.drain(FLOW, [caught_up, behind, unseen, halted], 4000)
    }
    assert lags == {0: (0, 0), 1: (40, 3000), 2: (40, None), 3: (None, None)}


def test_a_drain_in_slices_counts_what_came_between_them_once() -> None:
    """A caller drains thousands of partitions in slices (its lock let go in between):
    a count landing between two slices is in the slice that drains its partition, or in
    the next drain, never in both and never lost."""
    meter = Meter()
    held = {("t", p): state(("t", p), status="running") for p in range(4)}
    for s in held.values():
        meter.count(s, cumulative(1).since(Counters()))
    keys = meter.due(FLOW, held)
    first = meter.drain_keys(FLOW, keys[:2], held, 0)
    meter.count(held[("t", 0)], cumulative(5).since(Counters()))  # already drained
    meter.count(held[("t", 3)], cumulative(5).since(Counters()))  # not yet
    second = meter.drain_keys(FLOW, keys[2:], held, 0)
    assert [m.counters.records for m in first + second] == [1, 1, 1, 2]
    after = {m.partition: m.counters.records for m in meter.drain(FLOW, held.values(), 0)}
    assert after == {0: 1, 1: 0, 2: 0, 3: 0}
