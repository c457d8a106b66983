"""The failover ledger's arithmetic (srm_harness.group_ledger): what counts as skipped,
read twice, foreign."""

from __future__ import annotations

import pytest
from srm_harness.group_ledger import Ledger, NumberedTopic, Tally, record_id


def ids(partition: int, *seqs: int) -> list[bytes]:
    return [record_id(partition, s) for s in seqs]


def source(per_partition: int = 10, partitions: int = 2) -> dict[int, list[bytes]]:
    return {p: ids(p, *range(per_partition)) for p in range(partitions)}


def test_record_ids_are_partition_and_sequence() -> None:
    assert record_id(2, 17) == b"2:17"


def test_reading_prefixes_skips_nothing_and_reads_nothing_twice() -> None:
    ledger = Ledger(source())
    step = ledger.read(ids(0, 0, 1, 2) + ids(1, 0), "primary")
    assert step == Tally("primary", 4, (), (), 0, (), 7 + 9)
    assert ledger.skipped == ()
    assert ledger.read_twice == ()


def test_a_failover_that_resumes_too_late_skips_the_gap() -> None:
    ledger = Ledger(source())
    ledger.read(ids(0, 0, 1, 2))
    step = ledger.read(ids(0, 5, 6, 7, 8, 9), "backup")
    assert step.skipped == tuple(ids(0, 3, 4))
    assert step.read_twice == ()
    assert ledger.skipped == tuple(ids(0, 3, 4))


def test_a_conservative_failover_reads_the_overlap_twice() -> None:
    ledger = Ledger(source())
    ledger.read(ids(0, 0, 1, 2, 3, 4))
    step = ledger.read(ids(0, 2, 3, 4, 5, 6, 7, 8, 9), "backup")
    assert step.skipped == ()
    assert step.read_twice == tuple(ids(0, 2, 3, 4))
    assert step.extra_reads == 3
    assert step.not_reached == 10  # partition 1 untouched


def test_partitions_never_read_are_not_reached_not_skipped() -> None:
    ledger = Ledger(source(per_partition=4, partitions=3))
    ledger.read(ids(1, 0, 1, 2, 3))
    total = ledger.tally()
    assert total.skipped == ()
    assert total.not_reached == 8


def test_the_first_record_missing_counts_as_skipped() -> None:
    ledger = Ledger(source(per_partition=4, partitions=1))
    assert ledger.read(ids(0, 1, 2)).skipped == tuple(ids(0, 0))


def test_reading_a_skipped_record_later_removes_it_from_skipped() -> None:
    ledger = Ledger(source(per_partition=5, partitions=1))
    ledger.read(ids(0, 0, 3))
    assert ledger.skipped == tuple(ids(0, 1, 2))
    step = ledger.read(ids(0, 1, 2, 3, 4), "rewind")
    assert step.skipped == ()
    assert step.read_twice == tuple(ids(0, 3))
    assert ledger.skipped == ()


def test_a_step_lists_only_what_it_read_again_or_skipped() -> None:
    ledger = Ledger(source())
    ledger.read(ids(0, 0, 1, 2))
    ledger.read(ids(0, 2, 3), "failover")
    failback = ledger.read(ids(0, 3, 4, 6), "failback")
    assert failback.read_twice == tuple(ids(0, 3))
    assert failback.skipped == tuple(ids(0, 5))
    total = ledger.tally()
    assert total.read_twice == tuple(ids(0, 2, 3))
    assert total.extra_reads == 2
    assert total.skipped == tuple(ids(0, 5))


def test_reads_repeated_within_one_step_count_as_read_twice() -> None:
    ledger = Ledger(source())
    step = ledger.read(ids(0, 0, 1, 1, 1))
    assert step.read_twice == tuple(ids(0, 1))
    assert step.extra_reads == 2


def test_values_not_in_the_source_are_foreign_each_read_counted() -> None:
    ledger = Ledger(source(per_partition=3, partitions=1))
    step = ledger.read([b"0:0", b"aborted:0:1", b"0:1", b"aborted:0:1"])
    assert step.foreign == (b"aborted:0:1", b"aborted:0:1")
    assert step.read == 4
    assert step.skipped == ()
    assert ledger.tally().foreign == (b"aborted:0:1", b"aborted:0:1")


def test_a_later_round_of_the_source_extends_the_partitions() -> None:
    ledger = Ledger(source(per_partition=3, partitions=1))
    ledger.read(ids(0, 0, 1, 2))
    ledger.add_source({0: ids(0, 3, 4, 5)})
    assert ledger.tally().not_reached == 3
    assert ledger.read(ids(0, 4)).skipped == tuple(ids(0, 3))


def test_an_id_added_twice_to_the_source_is_refused() -> None:
    ledger = Ledger(source(per_partition=3, partitions=1))
    with pytest.raises(ValueError, match="already"):
        ledger.add_source({0: ids(0, 2)})


def test_results_are_in_partition_then_offset_order() -> None:
    ledger = Ledger(source(per_partition=12, partitions=2))
    ledger.read(ids(1, 11, 10) + ids(0, 11, 2, 10))
    step = ledger.read(ids(1, 10, 11) + ids(0, 10, 11, 2))
    assert step.read_twice == (*ids(0, 2, 10, 11), *ids(1, 10, 11))
    assert ledger.skipped[:3] == tuple(ids(0, 0, 1, 3))


def test_the_text_names_counts_and_a_few_ids() -> None:
    ledger = Ledger(source())
    ledger.read(ids(0, 0, 1, 2), "primary")
    ledger.read(ids(0, 1, 2, 3, 5) + [b"aborted:0:9"], "backup")
    text = str(ledger)
    assert "primary: read 3, skipped 0, read twice 0, foreign 0, not reached 17" in text
    assert "backup: read 5, skipped 1 [0:4], read twice 2 [0:1, 0:2], foreign 1" in text
    assert text.splitlines()[-1].startswith("total: read 8, skipped 1 [0:4], read twice 2")


def test_a_numbered_topic_grows_by_rounds() -> None:
    topic = NumberedTopic("t", {0: ids(0, 0, 1)}, {0: [b"aborted:0:1"]})
    topic.extend(NumberedTopic("t", {0: ids(0, 2), 1: ids(1, 0)}, {}))
    assert topic.ids == {0: ids(0, 0, 1, 2), 1: ids(1, 0)}
    assert (topic.committed_count, topic.aborted_count) == (4, 1)
