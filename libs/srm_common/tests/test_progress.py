"""Progress records and the exactly-once resume decision (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.domain.progress import (
    Halt,
    Progress,
    Resume,
    batch_end,
    reconcile,
    reconcile_shared,
)
from srm_common.errors import RecordFormatError

WHERE = "A:t-0 -> B:A.t-0"


def test_value_keeps_mm2_offset_first_and_round_trips() -> None:
    progress = Progress(next_upstream=101, next_downstream=40, inflight_end=150)
    assert progress.encode_value() == b'{"offset":100,"srm.downstream":40,"srm.inflight.end":150}'
    assert Progress.decode_value(progress.encode_value()) == progress


def test_mm2_value_reads_without_our_fields() -> None:
    assert Progress.decode_value(b'{"offset":41}') == Progress(42, None, None)


@pytest.mark.parametrize("value", [b"[]", b"{}", b'{"offset":"1"}', b"nope", b'{"offset":true}'])
def test_bad_values_are_format_errors(value: bytes) -> None:
    with pytest.raises(RecordFormatError):
        Progress.decode_value(value)


def test_nothing_recorded_and_empty_remote_starts_at_log_start() -> None:
    assert reconcile(None, target_end=0, source_log_start=7, where=WHERE) == Resume(7, 0)


def test_nothing_recorded_but_remote_has_records_halts() -> None:
    decision = reconcile(None, target_end=3, source_log_start=0, where=WHERE)
    assert isinstance(decision, Halt)
    assert "no progress is recorded" in decision.reason and WHERE in decision.reason


def test_clean_stop_resumes_where_recorded() -> None:
    decision = reconcile(Progress(50, 20), target_end=20, source_log_start=0, where=WHERE)
    assert decision == Resume(start=50, downstream=20)


def test_interrupted_batch_skips_exactly_what_landed() -> None:
    decision = reconcile(Progress(50, 20, 90), target_end=27, source_log_start=0, where=WHERE)
    assert decision == Resume(start=50, downstream=20, skip=7, must_reach=90)


def test_more_records_than_the_batch_in_flight_halts() -> None:
    decision = reconcile(Progress(50, 20, 55), target_end=27, source_log_start=0, where=WHERE)
    assert isinstance(decision, Halt) and "at most 5 records" in decision.reason


def test_records_beyond_a_recorded_batch_halt() -> None:
    decision = reconcile(Progress(50, 20), target_end=21, source_log_start=0, where=WHERE)
    assert isinstance(decision, Halt) and "no batch was in flight" in decision.reason


def test_truncated_remote_halts() -> None:
    decision = reconcile(Progress(50, 20), target_end=10, source_log_start=0, where=WHERE)
    assert isinstance(decision, Halt) and "truncated or recreated" in decision.reason


def test_retention_past_our_position_is_counted_as_lost() -> None:
    decision = reconcile(Progress(50, 20), target_end=20, source_log_start=80, where=WHERE)
    assert decision == Resume(start=80, downstream=20, lost=30)


def test_retention_inside_an_interrupted_batch_halts() -> None:
    decision = reconcile(Progress(50, 20, 90), target_end=25, source_log_start=60, where=WHERE)
    assert isinstance(decision, Halt) and "retention" in decision.reason


def test_mm2_progress_trusts_the_remote_end() -> None:
    decision = reconcile(Progress(50), target_end=33, source_log_start=0, where=WHERE)
    assert decision == Resume(start=50, downstream=33)


def test_batch_end_is_bounded_and_covers_an_interrupted_batch() -> None:
    assert batch_end(Resume(10, 0), committed_end=1000, max_records=100) == 110
    assert batch_end(Resume(10, 0), committed_end=50, max_records=100) == 50
    assert batch_end(Resume(10, 0), committed_end=10, max_records=100) is None
    interrupted = Resume(10, 0, skip=3, must_reach=500)
    assert batch_end(interrupted, committed_end=1000, max_records=100) == 500


# A model of one upstream partition (offsets with gaps, as compaction and transaction
# markers leave them) copied batch by batch, crashing after any number of acknowledged
# writes. Whatever the crash points, the remote partition ends as an exact copy.
@st.composite
def _partition(draw: st.DrawFn) -> list[int]:
    gaps = draw(st.lists(st.integers(1, 4), min_size=0, max_size=60))
    offsets, current = [], draw(st.integers(0, 5))
    for gap in gaps:
        offsets.append(current)
        current += gap
    return offsets


@given(
    _partition(),
    st.integers(1, 10),
    st.lists(st.integers(0, 12), max_size=8),
)
def test_crashes_anywhere_never_lose_or_double(
    upstream: list[int], max_records: int, crashes: list[int]
) -> None:
    log_end = (upstream[-1] + 1) if upstream else 0
    remote: list[int] = []  # upstream offset of each remote record, in order
    recorded: Progress | None = None
    pending_crashes = list(crashes)
    for _ in range(500):
        decision = reconcile(recorded, target_end=len(remote), source_log_start=0, where=WHERE)
        assert isinstance(decision, Resume), decision
        end = batch_end(decision, committed_end=log_end, max_records=max_records)
        if end is None:
            break
        recorded = decision.progress().started(end)
        batch = [o for o in upstream if decision.start <= o < end]
        to_write = batch[decision.skip :]
        crash_after = pending_crashes.pop(0) if pending_crashes else None
        if crash_after is not None and crash_after <= len(to_write):
            remote.extend(to_write[:crash_after])  # a prefix (maybe all) landed, then kill -9
            continue
        remote.extend(to_write)
        recorded = Progress(end, decision.downstream + len(batch))
    assert remote == upstream


def test_shared_partition_resumes_after_the_last_copy_found() -> None:
    recorded = Progress(50, 20, 90)
    found = reconcile_shared(recorded, last_copied=61, target_end=40, source_log_start=0)
    assert found == Resume(start=62, downstream=40)
    none_landed = reconcile_shared(recorded, last_copied=None, target_end=40, source_log_start=0)
    assert none_landed == Resume(start=50, downstream=40)
    assert reconcile_shared(None, last_copied=None, target_end=7, source_log_start=3) == Resume(
        start=3, downstream=7
    )
    older = reconcile_shared(recorded, last_copied=10, target_end=40, source_log_start=0)
    assert older.start == 50  # a copy from before the recorded position changes nothing
