"""Progress records and where a copy (re)starts: pure decisions, with a model checked by
hypothesis (crashes anywhere, a second writer now and then)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.domain.progress import (
    Halt,
    PartitionFacts,
    Progress,
    Resume,
    Surplus,
    Verify,
    offset_syncs,
    reconcile,
    reconcile_shared,
)
from srm_common.errors import RecordFormatError

WHERE = "A:t-0 -> B:A.t-0"
SYNC_CASES = json.loads((Path(__file__).parent / "golden" / "offset_syncs.json").read_text())


def facts(
    target_end: int = 0,
    *,
    log_start: int = 0,
    source_end: int = 1000,
    source_id: str | None = "S1",
    target_id: str | None = "T1",
) -> PartitionFacts:
    return PartitionFacts(source_id, log_start, source_end, target_id, target_end)


def test_value_keeps_mm2_offset_first_and_round_trips() -> None:
    progress = Progress(101, 40, 150, "S1", "T1", "r-7")
    assert progress.encode_value() == (
        b'{"offset":100,"srm.downstream":40,"srm.inflight.end":150,'
        b'"srm.source.topic.id":"S1","srm.target.topic.id":"T1","srm.resume":"r-7"}'
    )
    assert Progress.decode_value(progress.encode_value()) == progress


def test_values_written_before_topic_ids_still_read() -> None:
    value = b'{"offset":100,"srm.downstream":40,"srm.inflight.end":150}'
    assert Progress.decode_value(value) == Progress(101, 40, 150)


def test_mm2_value_reads_without_our_fields() -> None:
    assert Progress.decode_value(b'{"offset":41}') == Progress(42)


@pytest.mark.parametrize(
    "value",
    [b"[]", b"{}", b'{"offset":"1"}', b"nope", b'{"offset":true}', b'{"offset":1,"srm.resume":3}'],
)
def test_bad_values_are_format_errors(value: bytes) -> None:
    with pytest.raises(RecordFormatError):
        Progress.decode_value(value)


def test_nothing_recorded_and_empty_remote_starts_at_log_start() -> None:
    assert reconcile(None, facts(0, log_start=7), where=WHERE) == Resume(7, 0)


def test_nothing_recorded_but_remote_has_records_halts() -> None:
    decision = reconcile(None, facts(3), where=WHERE)
    assert isinstance(decision, Halt) and decision.kind == "conflict"
    assert "no progress is recorded" in decision.reason and WHERE in decision.reason


def test_clean_stop_resumes_where_recorded() -> None:
    assert reconcile(Progress(50, 20), facts(20), where=WHERE) == Resume(start=50, downstream=20)


def test_records_past_the_position_are_verified_before_anything_is_skipped() -> None:
    progress = Progress(50, 20, 90)
    assert reconcile(progress, facts(27), where=WHERE) == Verify(start=50, downstream=20, count=7)
    matched = Surplus(matched=7, next_upstream=59)
    assert reconcile(progress, facts(27), where=WHERE, surplus=matched) == Resume(
        start=59, downstream=27, verified=7
    )


def test_a_record_that_is_not_the_expected_copy_halts() -> None:
    progress = Progress(50, 20, 90)
    surplus = Surplus(matched=3, next_upstream=53, mismatch="the value differs")
    decision = reconcile(progress, facts(27), where=WHERE, surplus=surplus)
    assert isinstance(decision, Halt) and decision.kind == "conflict"
    assert "remote offset 23" in decision.reason and "the value differs" in decision.reason


def test_more_records_than_the_reservation_allows_halts_without_reading() -> None:
    decision = reconcile(Progress(50, 20, 55), facts(27), where=WHERE)
    assert isinstance(decision, Halt) and "at most 5" in decision.reason


def test_records_past_a_clean_release_halt() -> None:
    decision = reconcile(Progress(50, 20), facts(21), where=WHERE)
    assert isinstance(decision, Halt) and "nothing was in flight" in decision.reason


def test_truncated_remote_halts() -> None:
    decision = reconcile(Progress(50, 20), facts(10), where=WHERE)
    assert isinstance(decision, Halt) and decision.kind == "truncated"


def test_source_that_ends_before_our_position_halts() -> None:
    decision = reconcile(Progress(50, 20), facts(20, source_end=30), where=WHERE)
    assert isinstance(decision, Halt) and decision.kind == "truncated"
    assert "ends at offset 30, before the copied position 50" in decision.reason


@pytest.mark.parametrize(
    ("side", "changed"),
    [("source", {"source_id": "S2"}), ("remote", {"target_id": "T2"})],
)
def test_a_recreated_topic_halts_by_topic_id(side: str, changed: dict[str, str]) -> None:
    decision = reconcile(Progress(50, 20, None, "S1", "T1"), facts(20, **changed), where=WHERE)  # type: ignore[arg-type]
    assert isinstance(decision, Halt) and decision.kind == "recreated"
    assert f"the {side} topic was deleted and recreated" in decision.reason
    assert "srm-control" in decision.reason


def test_a_missing_topic_halts() -> None:
    decision = reconcile(Progress(50, 20), facts(20, target_id=None), where=WHERE)
    assert isinstance(decision, Halt) and decision.kind == "missing"


def test_progress_without_topic_ids_adopts_the_current_ones() -> None:
    decision = reconcile(Progress(50, 20), facts(20), where=WHERE)
    assert isinstance(decision, Resume)
    assert decision.progress(facts(20)) == Progress(50, 20, None, "S1", "T1")


def test_retention_past_our_position_is_counted_as_lost() -> None:
    decision = reconcile(Progress(50, 20), facts(20, log_start=80), where=WHERE)
    assert decision == Resume(start=80, downstream=20, lost=30)


def test_retention_inside_unverified_records_halts() -> None:
    decision = reconcile(Progress(50, 20, 90), facts(25, log_start=60), where=WHERE)
    assert isinstance(decision, Halt) and decision.kind == "retention"


def test_mm2_progress_trusts_the_remote_end() -> None:
    assert reconcile(Progress(50), facts(33), where=WHERE) == Resume(start=50, downstream=33)


@pytest.mark.parametrize("case", SYNC_CASES["cases"], ids=[c["name"] for c in SYNC_CASES["cases"]])
def test_offset_syncs_follow_the_shared_golden_cases(case: dict[str, object]) -> None:
    pairs = [tuple(p) for p in case["copies"]]  # type: ignore[union-attr]
    expected = [tuple(p) for p in case["syncs"]]  # type: ignore[union-attr]
    assert offset_syncs(pairs, shared=bool(case["shared"])) == expected  # type: ignore[arg-type]


def test_shared_partition_resumes_after_the_last_copy_found() -> None:
    recorded = Progress(50, 20, 90)
    found = reconcile_shared(recorded, facts(40), where=WHERE, last_copied=61)
    assert found == Resume(start=62, downstream=40)
    none_landed = reconcile_shared(recorded, facts(40), where=WHERE, last_copied=None)
    assert none_landed == Resume(start=50, downstream=40)
    fresh = reconcile_shared(None, facts(7, log_start=3), where=WHERE, last_copied=None)
    assert fresh == Resume(start=3, downstream=7)
    older = reconcile_shared(recorded, facts(40), where=WHERE, last_copied=10)
    assert isinstance(older, Resume) and older.start == 50


# A model of one upstream partition (offsets with gaps, as compaction and transaction
# markers leave them) copied continuously under reservations: progress is recorded now
# and then, the writer crashes after any number of acknowledged records (a prefix of what
# it sent landed), and now and then a second writer puts a foreign record on the remote
# partition. Whatever happens, the copy never loses or doubles a record silently: either
# the remote partition ends as an exact copy, or the partition halted and foreign data
# is indeed there.
@st.composite
def _partition(draw: st.DrawFn) -> list[int]:
    gaps = draw(st.lists(st.integers(1, 4), min_size=0, max_size=60))
    offsets, current = [], draw(st.integers(0, 5))
    for gap in gaps:
        offsets.append(current)
        current += gap
    return offsets


FOREIGN = -1


def _surplus(remote: list[int], upstream: list[int], progress: Progress, count: int) -> Surplus:
    assert progress.next_downstream is not None
    copies = remote[progress.next_downstream : progress.next_downstream + count]
    originals = [o for o in upstream if o >= progress.next_upstream][:count]
    matched, next_up = 0, progress.next_upstream
    for copy, original in zip(copies, originals, strict=False):
        if copy != original:
            return Surplus(matched, next_up, "differs")
        matched, next_up = matched + 1, original + 1
    return Surplus(matched, next_up, None if matched == count else "source has fewer")


@given(
    _partition(),
    st.integers(1, 10),
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12), st.booleans()), max_size=8),
)
def test_crashes_and_a_second_writer_never_lose_or_double_silently(
    upstream: list[int], window: int, runs: list[tuple[int, int, bool]]
) -> None:
    log_end = (upstream[-1] + 1) if upstream else 0
    now = facts(0, source_end=log_end)
    remote: list[int] = []  # upstream offset of each remote record (FOREIGN: not ours)
    recorded: Progress | None = None
    foreign = False
    pending = list(runs)
    for _ in range(200):
        now = facts(len(remote), source_end=log_end)
        decision = reconcile(recorded, now, where=WHERE)
        if isinstance(decision, Verify):
            assert recorded is not None
            surplus = _surplus(remote, upstream, recorded, decision.count)
            decision = reconcile(recorded, now, where=WHERE, surplus=surplus)
        if isinstance(decision, Halt):
            assert foreign, f"halted without foreign records: {decision.reason}"
            return
        assert isinstance(decision, Resume)
        start, down = decision.start, decision.downstream
        later = [o for o in upstream if o >= start]
        if not later:
            break
        # The reservation always reaches `window` offsets past the next record (a slot
        # that waits at a gap reports where it waits).
        reserve = later[0] + window
        recorded = decision.progress(now).reserved(reserve)
        sendable = [o for o in later if o < reserve]
        commit_after, crash_after, intruder = pending.pop(0) if pending else (99, 99, False)
        sent = sendable[: min(crash_after, len(sendable))]
        for index, offset in enumerate(sent):
            remote.append(offset)
            if index + 1 == commit_after:  # progress recorded with the acknowledged position
                recorded = Progress(offset + 1, down + index + 1, reserve, "S1", "T1")
        if crash_after >= len(sendable):  # a clean end of this run: progress recorded
            recorded = Progress(sendable[-1] + 1, down + len(sendable), reserve, "S1", "T1")
        if intruder:
            remote.append(FOREIGN)
            foreign = True
    assert not foreign, "a foreign record went unnoticed"
    assert remote == upstream
