"""The Python copy slot's partition state: offset syncs, counters, the latency histogram,
reservations and stops (:mod:`srm_driver.copier.partition`), against the golden cases the
core's offset-sync rule and the raw metrics format share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from srm_common.metrics.raw import LATENCY_BOUNDS_MS, Histogram, bucket_of
from srm_driver.copier.partition import (
    SENDING,
    STOPPED,
    STOPPING,
    WAITING_RESERVATION,
    PartitionCopy,
)

GOLDEN = Path(__file__).resolve().parents[3] / "libs" / "srm_common" / "tests" / "golden"


def _cases(name: str) -> list[dict[str, object]]:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))["cases"]


def _copy(start: int = 0, down: int = 0, reserve: int = 10**9, shared: bool = False):  # type: ignore[no-untyped-def]
    return PartitionCopy("t", 0, 1, "r", start, down, reserve, shared)


def _as_planned(case: dict[str, object]) -> bool:
    """Whether the case's copies land where a plan puts them (consecutive downstream
    offsets), or the partition is shared (a copy lands wherever)."""
    copies = case["copies"]
    assert isinstance(copies, list)
    return bool(case["shared"]) or all(c[1] == copies[0][1] + n for n, c in enumerate(copies))


@pytest.mark.parametrize(
    "case", [c for c in _cases("offset_syncs.json") if _as_planned(c)], ids=lambda c: c["name"]
)
def test_offset_syncs_of_acknowledgements_match_the_golden_case(case) -> None:  # type: ignore[no-untyped-def]
    copies = case["copies"]
    start, down = copies[0] if copies else (0, 0)
    p = _copy(start, down, shared=case["shared"])
    for up, landed in copies:
        p.sent(up, 0, -1)
        assert p.land(landed, 0)
    assert p.report(True)["syncs"] == case["syncs"]


@pytest.mark.parametrize(
    "case", [c for c in _cases("offset_syncs.json") if not _as_planned(c)],
    ids=lambda c: c["name"],
)  # fmt: skip
def test_a_copy_landing_off_plan_in_a_partition_of_its_own_is_refused_unchanged(case) -> None:  # type: ignore[no-untyped-def]
    """Not shared: a copy landing elsewhere than planned means another writer (the unit
    breaks on it), so it is not counted and makes no sync."""
    copies = case["copies"]
    p = _copy(copies[0][0], copies[0][1])
    for up, landed in copies:
        p.sent(up, 7, -1)
        if landed != p.prev_down + 1:
            before = p.report(False)
            assert not p.land(landed, 0)
            assert p.report(False) == before and p.outstanding == 1
            return
        assert p.land(landed, 0)
    raise AssertionError("the case has no copy off plan")


def test_a_copy_the_broker_had_already_is_where_it_was_planned_unless_shared() -> None:
    p = _copy(start=3, down=10)
    p.sent(3, 5, -1)
    assert p.land(None, 0)
    assert (p.report(False)["acked_up"], p.report(False)["acked_down"]) == (4, 11)
    shared = _copy(start=3, down=10, shared=True)
    shared.sent(3, 5, -1)
    assert not shared.land(None, 0) and shared.outstanding == 1


def test_a_plan_reports_the_histogram_of_its_acknowledged_copies_with_the_raw_bounds() -> None:
    probes = [0, 100_000, 2**62]
    for bound in LATENCY_BOUNDS_MS:
        probes += [bound - 1, bound, bound + 1]
    p = _copy()
    now = 2**63
    for offset, latency in enumerate(probes):
        p.sent(offset, 10, now - latency)
        assert p.land(offset, now)
    report = p.report(True)
    assert tuple(report["latency_hist"]) == Histogram.of(probes).counts
    assert report["latency_hist"][bucket_of(1)] == Histogram.of(probes).counts[bucket_of(1)]
    assert sum(report["latency_hist"]) == report["records"] == len(probes)
    assert (report["latency_min_ms"], report["latency_max_ms"]) == (min(probes), max(probes))
    assert report["bytes"] == 10 * len(probes)
    assert report["pending_ts"] == -1, "every copy acknowledged: none pending"
    assert (report["acked_up"], report["acked_down"]) == (len(probes), len(probes))


def test_a_copy_without_a_timestamp_counts_no_latency() -> None:
    p = _copy()
    p.sent(0, 1, -1)
    assert p.land(0, 1000)
    report = p.report(False)
    assert report["records"] == 1 and sum(report["latency_hist"]) == 0
    assert report["latency_min_ms"] == -1


def test_the_oldest_record_in_flight_is_the_pending_timestamp_until_acknowledged() -> None:
    p = _copy(start=5, down=3)
    p.sent(5, 1, 1000)
    p.sent(7, 1, 2000)
    report = p.report(False)
    assert report["pending_ts"] == 1000 and report["outstanding"] == 2
    assert (report["next_send"], report["acked_up"], report["acked_down"]) == (8, 5, 3)
    assert p.land(3, 1000)
    assert p.report(False)["pending_ts"] == 2000


def test_a_stop_waits_for_what_is_in_flight_and_a_failure_makes_the_plan_uncertain() -> None:
    p = _copy()
    p.sent(0, 1, -1)
    p.sent(1, 1, -1)
    p.stop()
    assert p.state == STOPPING and not p.stopped
    assert p.land(0, 0)
    assert p.state == STOPPING
    p.failed()
    assert p.stopped and p.report(False)["uncertain"] is True
    assert p.report(False)["state"] == STOPPED


def test_abandon_settles_everything_in_flight_as_unknown() -> None:
    p = _copy()
    for offset in range(3):
        p.sent(offset, 1, -1)
    p.stop({"kind": "transient", "message": "x"})
    p.abandon()
    report = p.report(False)
    assert report["state"] == STOPPED and report["outstanding"] == 0 and report["uncertain"]
    assert report["error"] == {"kind": "transient", "message": "x"}


def test_a_partition_waits_at_its_reservation_and_goes_on_once_it_moves() -> None:
    p = _copy(reserve=10)
    p.next_send = 10
    p.await_reservation(1234)
    assert p.state == WAITING_RESERVATION
    assert p.report(False)["pending_ts"] == 1234, "the waiting record is the oldest not copied"
    assert not p.maybe_resume()
    p.extend_reserve(5)
    assert p.reserve == 10, "a reservation never moves back"
    p.extend_reserve(20)
    assert p.maybe_resume() and p.state == SENDING
    assert p.report(False)["pending_ts"] == -1


def test_syncs_the_driver_confirmed_are_not_reported_again() -> None:
    p = _copy()
    for offset in (0, 1, 5):
        p.sent(offset, 1, -1)
        assert p.land(p.prev_down + 1, 0)
    first = p.report(True)["syncs"]
    assert first == [[0, 0], [1, 1], [5, 2]]
    p.confirm_syncs(2)
    assert p.report(True)["syncs"] == [[5, 2]]


def test_a_record_the_origin_rule_drops_moves_sending_on_and_counts() -> None:
    p = _copy()
    p.dropped_one(0)
    report = p.report(False)
    assert report["dropped"] == 1 and report["next_send"] == 1 and report["records"] == 0


def test_copies_sharing_a_latency_are_each_counted_in_its_bucket() -> None:
    p = _copy()
    served = [(100, 1000), (100, 1000), (100, 1000), (100, 1300), (100, 1000), (90, 1000)]
    for offset, (ts, now) in enumerate(served):
        p.sent(offset, 1, ts)
        assert p.land(offset, now)
    latencies = [now - ts for ts, now in served]
    report = p.report(False)
    assert tuple(report["latency_hist"]) == Histogram.of(latencies).counts
    assert report["latency_sum_ms"] == sum(latencies)
    assert (report["latency_min_ms"], report["latency_max_ms"]) == (900, 1200)
