"""``srm-control partitions --list`` at 10,000 halted partitions: counts and a summary
first, then the ones to look at first, a line saying what was left out; everything with
--all, one topic with --topic."""

from __future__ import annotations

from srm_common.control.events import (
    Envelope,
    FlowEnabled,
    LogStarted,
    PartitionHalted,
    PartitionResumeRequested,
    RecordsLost,
)
from srm_common.control.state import replay
from srm_control.partition_listing import partition_lines

FLOW = "primary->backup"


def state(halted: int):  # type: ignore[no-untyped-def]
    events = [LogStarted("L1", None, ""), FlowEnabled(FLOW)]
    for i in range(halted):
        kind = "conflict" if i % 4 else "config"
        events.append(PartitionHalted(FLOW, f"t{i // 10:04d}", i % 10, kind, f"why {i}", "d1"))
    for i in range(30):
        events.append(PartitionResumeRequested(FLOW, "r", i, "copy-end", None, f"q{i}"))
    for i in range(40):
        events.append(RecordsLost(FLOW, "lossy", i, 0, i + 1, "d1"))
    return replay(
        [
            Envelope(e, 1_700_000_000_000 + 1000 * n, "operator@host", None, n)
            for n, e in enumerate(events)
        ]
    )


def test_ten_thousand_halted_partitions_are_summed_up_then_the_longest_halted() -> None:
    lines = partition_lines(state(10_000), FLOW)
    text = "\n".join(lines)
    print("\n" + text)
    assert len(lines) < 100, "readable: not 20,000 lines"
    assert lines[0] == (
        "primary->backup: 10,000 halted partitions (conflict 7,500, config 2,500);"
        " the 20 halted longest:"
    )
    assert lines[1].startswith("  t0000:0  config since ") and lines[2] == "      why 0"
    assert "  ... and 9,980 more halted (--all, --limit N, or --topic TOPIC" in text
    assert "30 resumes asked; the 20 newest:" in text and "  r:29  resumed from copy-end" in text
    assert "Lost to retention before they were copied (820 offsets in 40 partitions;" in text
    assert text.index("  lossy:39  40 offsets") < text.index("  lossy:38  39 offsets")
    assert "... and 20 more partitions with losses" in text


def test_all_and_one_topic() -> None:
    big = state(10_000)
    assert len(partition_lines(big, FLOW, limit=None)) > 20_000
    lines = partition_lines(big, FLOW, topic="t0042")
    assert lines[0] == "primary->backup topic t0042: 10 halted partitions (conflict 7, config 3)"
    assert sum(1 for line in lines if line.startswith("  t0042:")) == 10


def test_a_few_read_as_before() -> None:
    lines = partition_lines(state(1), FLOW)
    assert lines[0] == "primary->backup: 1 halted partition"
    assert lines[1].startswith("  t0000:0  config since")
